"""An ``authorization_function`` for MLflow's authentication app on a team's JupyterHub: a request that carries a
hub token (``Authorization: Bearer <token>``, what MLflow's clients send for ``MLFLOW_TRACKING_TOKEN``) is made
as the hub user the token belongs to, so hub users never type a second password; any other request goes through
MLflow's own basic auth (its admin, scripts with an MLflow password).

The token must carry the access scope of the tracking server's hub service (``access:services!service=mlflow``;
the name is ``$JUPYTERHUB_SERVICE_NAME`` when set), as a token for any hub service must; otherwise 403.

The hub's users are MLflow users: when a hub token calls, the hub's users missing from MLflow's user store are
created, at most once a minute, so that a colleague can be shared with before their first run, and the creator of
an experiment manages it. They are marked as the hub's (a password hash no password matches, ``HUB_HASH``): a hub
token maps only onto such a user, never onto MLflow's admin or a user someone gave a password (a hub user named
like one is refused with 403).

    # the auth app's .ini (MLFLOW_AUTH_CONFIG_PATH)
    [mlflow]
    authorization_function = jupyter_air.team.mlflow_auth:authenticate_request_hub_token

The MLflow server's environment needs ``JUPYTERHUB_API_URL`` and ``JUPYTERHUB_API_TOKEN``: a hub service token
with the ``list:users`` scope.
"""

from __future__ import annotations

import json
import os
import secrets
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass

#: Seconds a token's user is remembered, and between two copies of the hub's user list.
TOKEN_SECONDS = SYNC_SECONDS = 60
#: Tokens remembered at most (the oldest are forgotten first).
MAX_TOKENS = 10_000
#: The start of the password hash of an MLflow user made for a hub user: a valid werkzeug hash of a password nobody
#: has (its value is random), which MLflow's own user creation never makes (its salt is random).
HUB_HASH = "pbkdf2:sha256:1$jupyter-air-hub-user$"

_lock = threading.Lock()
_tokens: dict[str, tuple[float, HubUser | None]] = {}
_synced = -SYNC_SECONDS
#: Users known to be in MLflow's user store since the last copy of the hub's list.
_known: set[str] = set()
#: Whether an MLflow user was made for the hub, and when that was seen.
_hub_users: dict[str, tuple[float, bool]] = {}


@dataclass(frozen=True)
class HubUser:
    """The hub user a token belongs to, and whether the token may call the tracking server."""

    name: str
    may_track: bool


def access_scope() -> str:
    """The scope a hub token needs here: access to the tracking server's hub service."""
    return f"access:services!service={os.environ.get('JUPYTERHUB_SERVICE_NAME') or 'mlflow'}"


def authenticate_request_hub_token():
    """The request's user: a hub token's owner (an MLflow user made for the hub), else MLflow's basic auth (a 401
    asking for credentials); 403 with why for a token without the access scope or a name that is not the hub's."""
    from flask import request
    from mlflow.server.auth import authenticate_request_basic_auth, make_basic_auth_response
    from werkzeug.datastructures import Authorization

    scheme, _, token = (request.headers.get("Authorization") or "").partition(" ")
    if scheme.lower() not in ("bearer", "token") or not token.strip():
        return authenticate_request_basic_auth()
    user = _owner(token.strip())
    if user is None:
        return make_basic_auth_response()
    if not user.may_track:
        return _forbidden(
            f"this hub token of {user.name!r} lacks the scope {access_scope()}, which the team's tracking server "
            "requires: use a token of a role that has it (the hub's roles for users and their servers, "
            "c.JupyterHub.load_roles), e.g. your server's $JUPYTERHUB_API_TOKEN"
        )
    _provision(user.name)
    if not _made_for_hub(user.name):
        return _forbidden(
            f"hub user {user.name!r} is not taken as MLflow's user of that name, which was not made for the hub "
            "(MLflow's admin, or a user with a password): sign in with that user's MLflow password, or ask the "
            "hub's admins to rename the hub user"
        )
    return Authorization("basic", {"username": user.name})


def _forbidden(message: str):
    from flask import Response

    body = json.dumps({"error_code": "PERMISSION_DENIED", "message": message})
    return Response(body, status=403, mimetype="application/json")


def _hub(path: str, token: str):
    request = urllib.request.Request(
        f"{os.environ['JUPYTERHUB_API_URL'].rstrip('/')}/{path}", headers={"Authorization": f"token {token}"}
    )
    with urllib.request.urlopen(request, timeout=10) as answer:
        return json.load(answer)


def _owner(token: str) -> HubUser | None:
    """The hub user ``token`` belongs to (None: no valid user token), remembered for TOKEN_SECONDS."""
    now = time.monotonic()
    with _lock:
        known = _tokens.get(token)
    if known is not None and now - known[0] < TOKEN_SECONDS:
        return known[1]
    try:
        model = _hub("user", token)
        scopes = set(model.get("scopes") or ())
        user = HubUser(model["name"], bool({"access:services", access_scope()} & scopes))
        user = user if model.get("kind", "user") == "user" else None
    except urllib.error.HTTPError as err:
        if err.code not in (401, 403):
            raise
        user = None
    with _lock:
        if len(_tokens) >= MAX_TOKENS:
            _tokens.pop(next(iter(_tokens)))
        _tokens[token] = (now, user)
    return user


def _provision(caller: str) -> None:
    """Create the caller and the hub's other users in MLflow's user store where missing (once a minute); a caller
    already seen costs no lock and no query."""
    global _synced
    if caller in _known and time.monotonic() - _synced < SYNC_SECONDS:
        return
    from mlflow.server.auth import store

    with _lock:
        if caller in _known and time.monotonic() - _synced < SYNC_SECONDS:
            return  # another request synced meanwhile
        names = {user["name"] for user in _hub("users", os.environ["JUPYTERHUB_API_TOKEN"])} | {caller}
        for name in sorted(names):
            if not store.has_user(name):
                _create(store, name)
        _known.update(names)
        _synced = time.monotonic()


def _create(store, name: str) -> None:
    """MLflow user ``name``, marked as the hub's (HUB_HASH): no password signs in as them."""
    from mlflow.server.auth.db.models import SqlUser
    from mlflow.utils.validation import _validate_username

    _validate_username(name)
    try:
        with store.ManagedSessionMaker(read_only=False) as session:
            session.add(SqlUser(username=name, password_hash=HUB_HASH + secrets.token_hex(32), is_admin=False))
    except Exception:  # another worker of the server created it meanwhile
        if not store.has_user(name):
            raise


def _made_for_hub(name: str) -> bool:
    """True when MLflow's user ``name`` was made for a hub user and is no admin (remembered for TOKEN_SECONDS)."""
    now = time.monotonic()
    seen = _hub_users.get(name)
    if seen is not None and now - seen[0] < TOKEN_SECONDS:
        return seen[1]
    from mlflow.server.auth import store

    user = store.get_user(name)
    made = user.password_hash.startswith(HUB_HASH) and not user.is_admin
    with _lock:
        if len(_hub_users) >= MAX_TOKENS:
            _hub_users.pop(next(iter(_hub_users)))
        _hub_users[name] = (now, made)
    return made
