"""A team stack on 127.0.0.1 for trying and testing, not for production: JupyterHub with a shared-password
authenticator, configurable-http-proxy, the air-jobs service it starts, and a token-only hub service ``mlflow``
(the token a tracking server that takes hub tokens uses: scope ``list:users``). Users alice, bob and carol (carol
in group ml) and the admin hubadmin. With ``spawn``, each user's JupyterLab runs as this machine's user (the
simple local spawner), tracking into ``mlflow_url`` with their hub token."""

from __future__ import annotations

import contextlib
import json
import os
import pathlib
import secrets
import signal
import socket
import subprocess
import sys
import time
import urllib.request

from jupyter_air.owned import write_private
from jupyter_air.workloads.supervisor.service_secrets import SECRETS_FILE_ENV

#: Seconds the hub may take to answer (about 5 s on a quiet machine).
START_SECONDS = 120
USERS, ADMIN = ("alice", "bob", "carol"), "hubadmin"

CONFIG = """
c = get_config()  # noqa
# The hub gets SIGTERM (and stops its proxy, the service and users' servers) when its starter ends, however it ends
from jupyter_air.procs import die_with_parent
die_with_parent({starter})
c.JupyterHub.ip = "127.0.0.1"
c.JupyterHub.port = {port}
c.JupyterHub.hub_ip = "127.0.0.1"
c.JupyterHub.hub_port = {hub_port}
c.ConfigurableHTTPProxy.api_url = "http://127.0.0.1:{proxy_api_port}"
c.ConfigurableHTTPProxy.command = [{proxy!r}]
c.JupyterHub.db_url = "sqlite:///{folder}/hub.sqlite"
c.JupyterHub.cookie_secret_file = "{folder}/cookie_secret"
c.JupyterHub.authenticator_class = "dummy"  # NOT FOR PRODUCTION: one shared password
c.DummyAuthenticator.password = {password!r}
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
    {{"name": "user", "scopes": ["self", "access:services!service=air-jobs", "access:services!service=mlflow"]}},
    {{"name": "mlflow-users", "services": ["mlflow"], "scopes": ["list:users"]}},
    {{
        "name": "server",
        "scopes": [
            "users:activity!user",
            "access:servers!server",
            "access:services!service=air-jobs",
            "access:services!service=mlflow",
        ],
    }},
]
c.JupyterHub.spawner_class = "simple"  # NOT FOR PRODUCTION: every user's server runs as this machine's user
c.Spawner.notebook_dir = "{folder}/users/{{username}}"
c.SimpleLocalProcessSpawner.home_dir_template = "{folder}/users/{{username}}"  # HOME: settings stay in the folder
c.Spawner.default_url = "/lab"
c.Spawner.cmd = [{python!r}, "-m", "jupyterhub.singleuser"]
c.Spawner.args = {spawner_args!r}
c.Spawner.environment = {{
    "AIR_HOME": lambda spawner: "{folder}/users/" + spawner.user.name + "/.air",
    "MLFLOW_TRACKING_URI": {mlflow_url!r},
    "MLFLOW_TRACKING_TOKEN": lambda spawner: spawner.api_token,
    "AIR_JOBS_URL": "http://127.0.0.1:{service_port}/services/air-jobs/",  # the service itself: no proxy hop
}}
"""


def default_proxy() -> str:
    """configurable-http-proxy from a source checkout's ``node_modules`` (``jlpm install``), else from PATH."""
    checkout = pathlib.Path(__file__).resolve().parents[2] / "node_modules" / ".bin" / "configurable-http-proxy"
    return str(checkout) if checkout.exists() else "configurable-http-proxy"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Hub:
    """The hub in ``folder`` (0700), started at once; :meth:`ready` waits for it. ``environment``: the air-jobs
    service's (its ``AIR_HOME``); ``credentials``: its own (MLflow's, Ray's), written to
    ``air-jobs-secrets.json`` (0600) whose path it gets as ``AIR_JOBS_SECRETS_FILE``; ``mlflow_url``: where users'
    servers track; ``port``: the proxy's public port (a free one by default)."""

    def __init__(
        self,
        folder: pathlib.Path,
        environment: dict[str, str],
        mlflow_url: str = "",
        proxy: str = "",
        port: int | None = None,
        credentials: dict[str, str] | None = None,
    ):
        self.folder = folder
        folder.chmod(0o700)
        if credentials:  # never in its environment, where its jobs could read them
            write_private(folder / "air-jobs-secrets.json", json.dumps(credentials))
            environment = {**environment, SECRETS_FILE_ENV: str(folder / "air-jobs-secrets.json")}
        ports = {name: free_port() for name in ("port", "hub_port", "proxy_api_port", "service_port")}
        if port is not None:
            ports["port"] = port
        self.url = f"http://127.0.0.1:{ports['port']}"
        #: Where users' servers reach air-jobs: its own address (the hub's proxy serves it at ``url`` + the path too).
        self.service_url = f"http://127.0.0.1:{ports['service_port']}/services/air-jobs/"
        self.mlflow_token, self.password = secrets.token_hex(16), secrets.token_urlsafe(12)
        for user in (*USERS, ADMIN):
            (folder / "users" / user).mkdir(parents=True, exist_ok=True)
        config = CONFIG.format(
            **ports,
            folder=folder,
            proxy=proxy or default_proxy(),
            password=self.password,
            users=set(USERS),
            admin=ADMIN,
            python=sys.executable,
            environment=environment,
            mlflow_token=self.mlflow_token,
            mlflow_url=mlflow_url,
            spawner_args=["--allow-root"] if os.geteuid() == 0 else [],
            starter=os.getpid(),
        )
        write_private(folder / "jupyterhub_config.py", config)  # the password and the mlflow service's token
        with open(folder / "hub.log", "wb") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "jupyterhub", "-f", str(folder / "jupyterhub_config.py")],
                cwd=folder,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )

    def ready(self) -> Hub:
        """Wait until the hub answers; fails with the end of its log if it exits or is late."""
        deadline = time.monotonic() + START_SECONDS
        while True:
            try:
                with urllib.request.urlopen(f"{self.url}/hub/api/", timeout=5) as answer:
                    if answer.status == 200:
                        return self
            except OSError:
                pass
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("JupyterHub did not start:\n" + (self.folder / "hub.log").read_text()[-3000:])
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
                data=json.dumps({"note": "jupyter_air team stack"}).encode(),
                method="POST",
                headers={"Authorization": f"token {tokens[ADMIN]}"},
            )
            with urllib.request.urlopen(request, timeout=30) as answer:
                tokens[user] = json.load(answer)["token"]
        return tokens

    def stop(self) -> None:
        """Stop the hub (it stops its proxy, the service and users' servers)."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()
