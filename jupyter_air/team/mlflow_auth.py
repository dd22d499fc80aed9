"""An ``authorization_function`` for MLflow's authentication app on a team's JupyterHub: a request that carries a
hub token (``Authorization: Bearer <token>``, what MLflow's clients send for ``MLFLOW_TRACKING_TOKEN``) is made
as the hub user the token belongs to, so hub users never type a second password; any other request goes through
MLflow's own basic auth (its admin, scripts with an MLflow password).

The hub's users are MLflow users: when a hub token calls, the hub's users missing from MLflow's user store are
created (each with an unguessable password nobody is told), at most once a minute, so that a colleague can be
shared with before their first run, and the creator of an experiment manages it.

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

#: Seconds a token's user is remembered, and between two copies of the hub's user list.
TOKEN_SECONDS = SYNC_SECONDS = 60
#: Tokens remembered at most (the oldest are forgotten first).
MAX_TOKENS = 10_000

_lock = threading.Lock()
_tokens: dict[str, tuple[float, str | None]] = {}
_synced = -SYNC_SECONDS
#: Users known to be in MLflow's user store since the last copy of the hub's list.
_known: set[str] = set()


def authenticate_request_hub_token():
    """The request's user: a hub token's owner, else MLflow's basic auth (a 401 asking for credentials)."""
    from flask import request
    from mlflow.server.auth import authenticate_request_basic_auth, make_basic_auth_response
    from werkzeug.datastructures import Authorization

    scheme, _, token = (request.headers.get("Authorization") or "").partition(" ")
    if scheme.lower() not in ("bearer", "token") or not token.strip():
        return authenticate_request_basic_auth()
    name = _owner(token.strip())
    if name is None:
        return make_basic_auth_response()
    _provision(name)
    return Authorization("basic", {"username": name})


def _hub(path: str, token: str):
    request = urllib.request.Request(
        f"{os.environ['JUPYTERHUB_API_URL'].rstrip('/')}/{path}", headers={"Authorization": f"token {token}"}
    )
    with urllib.request.urlopen(request, timeout=10) as answer:
        return json.load(answer)


def _owner(token: str) -> str | None:
    """The hub user ``token`` belongs to (None: no valid user token), remembered for TOKEN_SECONDS."""
    now = time.monotonic()
    with _lock:
        known = _tokens.get(token)
    if known is not None and now - known[0] < TOKEN_SECONDS:
        return known[1]
    try:
        model = _hub("user", token)
        name = model.get("name") if model.get("kind", "user") == "user" else None
    except urllib.error.HTTPError as err:
        if err.code not in (401, 403):
            raise
        name = None
    with _lock:
        if len(_tokens) >= MAX_TOKENS:
            _tokens.pop(next(iter(_tokens)))
        _tokens[token] = (now, name)
    return name


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
            if store.has_user(name):
                continue
            try:
                store.create_user(name, secrets.token_urlsafe(32))
            except Exception:  # another worker of the server created it meanwhile
                if not store.has_user(name):
                    raise
        _known.update(names)
        _synced = time.monotonic()
