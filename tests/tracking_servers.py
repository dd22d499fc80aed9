"""A real `mlflow server` over HTTP on 127.0.0.1 for tests: SQLite, served artifacts, one worker; stopped with its
process group. Optionally with MLflow's authentication app and its users."""

from __future__ import annotations

import base64
import contextlib
import json
import os
import pathlib
import signal
import socket
import subprocess
import sys
import time
import urllib.request

#: Seconds `mlflow server` may take to answer /health (about 20 s on a quiet machine).
START_SECONDS = 300


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class TrackingServer:
    """Started at once (its start overlaps the caller's own set-up); :meth:`ready` waits until it answers."""

    def __init__(self, folder: pathlib.Path, *args: str, env: dict[str, str] | None = None, port: int | None = None):
        self.folder = folder
        self.uri = f"http://127.0.0.1:{port or _free_port()}"
        command = [sys.executable, "-m", "mlflow", "server", "--workers", "1", *args]
        command += ["--backend-store-uri", f"sqlite:///{folder / 'mlflow.db'}", "--serve-artifacts"]
        command += ["--artifacts-destination", str(folder / "artifacts"), "--host", "127.0.0.1"]
        command += ["--port", self.uri.rsplit(":", 1)[1]]
        env = {**(os.environ if env is None else env), "TMPDIR": str(folder)}  # its temp files stay in folder
        # Without MLflow's GenAI job runner (8 more processes importing MLflow: 18.5 CPU-seconds and 2.3 GiB to start
        # in place of 4.3 and 0.5), which no test of a tracking server uses.
        env.setdefault("MLFLOW_SERVER_ENABLE_JOB_EXECUTION", "false")
        with open(folder / "server.log", "wb") as log:
            self.process = subprocess.Popen(
                command, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True
            )

    def ready(self) -> str:
        """The server's URI once it answers ``/health``; fails with the end of its log if it exits or is late."""
        deadline = time.monotonic() + START_SECONDS
        while True:
            try:
                with urllib.request.urlopen(f"{self.uri}/health", timeout=5) as answer:
                    if answer.status == 200:
                        return self.uri
            except OSError:
                pass
            late = time.monotonic() > deadline
            assert self.process.poll() is None and not late, (self.folder / "server.log").read_text()[-3000:]
            time.sleep(0.5)

    def stop(self) -> None:
        os.killpg(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()


@contextlib.contextmanager
def tracking_server(folder: pathlib.Path, *args: str, env: dict[str, str] | None = None, port: int | None = None):
    """A :class:`TrackingServer` in ``folder`` (on ``port``, default a free one), stopped at the end."""
    server = TrackingServer(folder, *args, env=env, port=port)
    try:
        yield server
    finally:
        server.stop()


@contextlib.contextmanager
def auth_tracking_server(
    folder: pathlib.Path,
    admin_password: str,
    function: str = "mlflow.server.auth:authenticate_request_basic_auth",
    environment: dict[str, str] | None = None,
    port: int | None = None,
):
    """A :class:`TrackingServer` running MLflow's authentication app, granting nothing by default
    (``default_permission = NO_PERMISSIONS``) as a team's server does; its admin is ``admin``. ``function``: its
    ``authorization_function``; ``environment``: more variables for the server; ``port``: where it listens."""
    (folder / "auth.ini").write_text(
        f"[mlflow]\ndefault_permission = NO_PERMISSIONS\ndatabase_uri = sqlite:///{folder / 'auth.db'}\n"
        f"admin_username = admin\nadmin_password = {admin_password}\nauthorization_function = {function}\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("MLFLOW_")}
    env.update(MLFLOW_AUTH_CONFIG_PATH=str(folder / "auth.ini"), MLFLOW_FLASK_SERVER_SECRET_KEY="test-secret-key")
    env.update(environment or {})
    with tracking_server(folder, "--app-name", "basic-auth", env=env, port=port) as server:
        yield server


def create_user(uri: str, admin_password: str, user: str, password: str) -> None:
    """Create an MLflow user on an :func:`auth_tracking_server` (as its admin)."""
    admin = base64.b64encode(f"admin:{admin_password}".encode()).decode()
    request = urllib.request.Request(
        f"{uri}/api/2.0/mlflow/users/create",
        data=json.dumps({"username": user, "password": password}).encode(),
        headers={"Authorization": f"Basic {admin}", "Content-Type": "application/json"},
    )
    urllib.request.urlopen(request, timeout=60).close()
