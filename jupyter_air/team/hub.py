"""What the job service asks JupyterHub: who calls (the user model of their token: name, groups, admin) and whom a
grant may name (the hub's users and groups, read with the service's own token, which needs the ``read:users:name``
and ``read:groups:name`` scopes)."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from urllib.parse import quote

from jupyter_air.workloads.state.permissions import Caller

#: Seconds a question to the hub may take.
TIMEOUT_SECONDS = 10


def caller_of(user: dict) -> Caller:
    """The caller a hub user model names (a service calling: no user, so no job permission)."""
    return Caller(user["name"], frozenset(user.get("groups") or ()), bool(user.get("admin")))


class HubDirectory:
    """The users and groups of the hub at ``api_url`` (``$JUPYTERHUB_API_URL``), asked with ``token``."""

    def __init__(self, api_url: str, token: str):
        self.api_url, self.token = api_url.rstrip("/"), token

    def has_user(self, name: str) -> bool:
        return self._exists(f"users/{quote(name, safe='')}")

    def has_group(self, name: str) -> bool:
        return self._exists(f"groups/{quote(name, safe='')}")

    def unknown(self, kind: str, name: str) -> str:
        return f"no {kind} {name!r} on this JupyterHub; its admins add users and groups (the hub's Admin page)"

    def _exists(self, path: str) -> bool:
        request = urllib.request.Request(f"{self.api_url}/{path}", headers={"Authorization": f"token {self.token}"})
        try:
            with urllib.request.urlopen(request, timeout=TIMEOUT_SECONDS) as answer:
                return bool(json.load(answer).get("name"))
        except urllib.error.HTTPError as err:
            if err.code == 404:
                return False
            raise RuntimeError(
                f"JupyterHub answered {err.code} to the job service's question about {path}: give the air-jobs "
                "service a role with the read:users:name and read:groups:name scopes (c.JupyterHub.load_roles)"
            ) from None
