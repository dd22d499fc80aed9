"""A real JupyterHub on 127.0.0.1 for tests, with the users alice, bob and carol (carol in group ml), the admin
hubadmin, configurable-http-proxy, the air-jobs service it starts, and a token-only service `mlflow` (for a
tracking server that takes hub tokens: ``mlflow_token``, scope ``list:users``); users' API tokens on demand."""

from __future__ import annotations

import contextlib
import json
import os
import pathlib
import secrets
import signal
import subprocess
import sys
import time
import urllib.request

from tracking_servers import _free_port

#: Seconds the hub may take to answer (about 5 s on a quiet machine).
START_SECONDS = 120
PROXY = pathlib.Path(__file__).parents[1] / "node_modules" / ".bin" / "configurable-http-proxy"
USERS, ADMIN = ("alice", "bob", "carol"), "hubadmin"

CONFIG = """
c = get_config()  # noqa
c.JupyterHub.ip = "127.0.0.1"
c.JupyterHub.port = {port}
c.JupyterHub.hub_ip = "127.0.0.1"
c.JupyterHub.hub_port = {hub_port}
c.ConfigurableHTTPProxy.api_url = "http://127.0.0.1:{proxy_api_port}"
c.ConfigurableHTTPProxy.command = [{proxy!r}]
c.JupyterHub.db_url = "sqlite:///{folder}/hub.sqlite"
c.JupyterHub.cookie_secret_file = "{folder}/cookie_secret"
c.JupyterHub.authenticator_class = "dummy"
c.Authenticator.allowed_users = {users!r}
c.Authenticator.admin_users = {{{admin!r}}}
c.JupyterHub.load_groups = {{"ml": {{"users": ["carol"]}}}}
c.JupyterHub.services = [
    {{
        "name": "air-jobs",
        "url": "http://127.0.0.1:{service_port}",
        "command": [{python!r}, "-m", "jupyter_air.team.service"],
        "environment": {environment!r},
    }},
    {{"name": "mlflow", "api_token": {mlflow_token!r}}},
]
c.JupyterHub.load_roles = [
    {{"name": "air-jobs-directory", "services": ["air-jobs"], "scopes": ["read:users:name", "read:groups:name"]}},
    {{"name": "user", "scopes": ["self", "access:services!service=air-jobs"]}},
    {{"name": "mlflow-users", "services": ["mlflow"], "scopes": ["list:users"]}},
]
"""


class TeamHub:
    """The hub, started at once; :meth:`ready` waits for it and the service."""

    def __init__(self, folder: pathlib.Path, environment: dict[str, str]):
        self.folder = folder
        ports = {name: _free_port() for name in ("port", "hub_port", "proxy_api_port", "service_port")}
        self.url = f"http://127.0.0.1:{ports['port']}"
        self.mlflow_token = secrets.token_hex(16)
        config = CONFIG.format(
            **ports,
            folder=folder,
            proxy=str(PROXY),
            users=set(USERS),
            admin=ADMIN,
            python=sys.executable,
            environment=environment,
            mlflow_token=self.mlflow_token,
        )
        (folder / "jupyterhub_config.py").write_text(config)
        with open(folder / "hub.log", "wb") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "jupyterhub", "-f", str(folder / "jupyterhub_config.py")],
                cwd=folder,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )

    def ready(self) -> TeamHub:
        deadline = time.monotonic() + START_SECONDS
        while True:
            try:
                with urllib.request.urlopen(f"{self.url}/hub/api/", timeout=5) as answer:
                    if answer.status == 200:
                        return self
            except OSError:
                pass
            late = time.monotonic() > deadline
            assert self.process.poll() is None and not late, (self.folder / "hub.log").read_text()[-3000:]
            time.sleep(0.3)

    def tokens(self) -> dict[str, str]:
        """A new API token of each user and of the admin (their roles' scopes): the admin's from `jupyterhub
        token`, the others' through the hub's REST API with it."""
        made = subprocess.run(
            [sys.executable, "-m", "jupyterhub", "token", ADMIN, "-f", str(self.folder / "jupyterhub_config.py")],
            cwd=self.folder,
            capture_output=True,
            text=True,
            timeout=120,
            check=True,
        )
        tokens = {ADMIN: made.stdout.strip().splitlines()[-1]}
        for user in USERS:
            request = urllib.request.Request(
                f"{self.url}/hub/api/users/{user}/tokens",
                data=json.dumps({"note": "tests"}).encode(),
                method="POST",
                headers={"Authorization": f"token {tokens[ADMIN]}"},
            )
            with urllib.request.urlopen(request, timeout=30) as answer:
                tokens[user] = json.load(answer)["token"]
        return tokens

    def stop(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()
