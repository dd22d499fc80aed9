"""The team stack of the air-jobs tests (a hub, its air-jobs service on a team job store and MLflow store) and the
ways its users call the service: HTTP with their hub token, their Jupyter server's client, `air` in their terminal."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

from jupyter_air.team.stack import Hub
from jupyter_air.workloads.jobs.jobs import Jobs
from jupyter_air.workloads.state.logs import OUTPUT, node_dir
from jupyter_air.workloads.surfaces.team_jobs import ServiceJobs

#: The service's own credentials, given in its secrets file (the SQLite store needs none: they are there to be kept).
CREDENTIALS = {
    "MLFLOW_TRACKING_USERNAME": "admin",
    "MLFLOW_TRACKING_PASSWORD": "mlflow-admin-password-5c1d",
    "RAY_AUTH_TOKEN": "ray-cluster-token-9e4b",
}


@contextlib.contextmanager
def team_hub(folder, environment: dict[str, str] | None = None):
    """The hub (not yet ready: ``hub.ready()`` waits) with its air-jobs service on a job store and an MLflow store in
    ``folder`` (and ``environment`` besides), its CREDENTIALS in its secrets file; stopped, every process of it, on
    the way out."""
    service = {"AIR_HOME": str(folder / "air"), "MLFLOW_TRACKING_URI": f"sqlite:///{folder / 'mlflow.db'}"}
    service.update(environment or {})
    hub = Hub(folder, service, credentials=CREDENTIALS)
    try:
        yield hub
    finally:
        hub.stop()


def ended_job(hub: Hub, owner: str, output: str) -> str:
    """A job of ``owner`` in the service's job store, ended, whose log is ``output``."""
    store = Jobs(hub.folder / "air").store
    workload = {"experiment_name": "team-exp", "command": "true", "compute": {"num_accelerators": 0}}
    job = store.create_job({**workload, "max_retries": 0}, "w.yaml", owner, "local", "").job_run_id
    store.start_attempt(job, 0, "0123456789abcdef", None)
    log = node_dir(store.job_dir(job), 0, 0)
    log.mkdir(parents=True)
    (log / OUTPUT).write_text(output)
    store.update_attempt(job, 0, status="FINISHED", ended_ms=1)
    store.finish(job, "SUCCEEDED")
    return job


def service(team, user: str) -> ServiceJobs:
    """The service as ``user``'s Jupyter server calls it (the client its panel routes use)."""
    hub, _, tokens = team
    return ServiceJobs(f"{hub.url}/services/air-jobs/", tokens[user])


def call(team, user: str | None, method: str, path: str, body: dict | None = None) -> tuple[int, dict]:
    hub, _, tokens = team
    request = urllib.request.Request(
        f"{hub.url}/services/air-jobs/{path}",
        data=None if body is None else json.dumps(body).encode(),
        method=method,
        headers={"Authorization": f"token {tokens[user]}"} if user else {},
    )
    try:
        with urllib.request.urlopen(request, timeout=60) as answer:
            return answer.status, json.load(answer)
    except urllib.error.HTTPError as err:
        text = err.read().decode()
        try:
            return err.code, json.loads(text)
        except ValueError:
            return err.code, {"text": text}


def air(team, user: str, *args: str, cwd=None) -> subprocess.CompletedProcess:
    """`air` in ``user``'s terminal on the hub: AIR_JOBS_URL and their hub token, as their server's terminals have."""
    hub, _, tokens = team
    env = {**os.environ, "AIR_JOBS_URL": f"{hub.url}/services/air-jobs/", "JUPYTERHUB_API_TOKEN": tokens[user]}
    env["AIR_HOME"] = str(hub.folder / f"{user}-own-air-home")  # never used for these commands
    command = [sys.executable, "-m", "jupyter_air.cli", *args]
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=180, cwd=cwd)


def finished(user_service, job: dict, timeout: float = 120) -> dict:
    """The job once it has ended (a bounded wait, not a speed assertion)."""
    deadline = time.monotonic() + timeout
    while (ended := user_service.get(job["job_run_id"]))["status"] in ("PENDING", "RUNNING"):
        assert time.monotonic() < deadline, ended
        time.sleep(0.3)
    return ended


#: Prints the environment of the service, of the job's supervisor (the shell's parent) and of the job, then tries the
#: service's secrets file, which the default mode shares with every job.
PROBE = (
    r"echo '#probe-service'; tr '\0' '\n' < /proc/$SERVICE_PID/environ; echo; echo '#probe-supervisor'; "
    r"tr '\0' '\n' < /proc/$PPID/environ; echo; echo '#probe-job'; env; echo '#probe-file'; "
    r'cat "$AIR_JOBS_SECRETS_FILE" > /dev/null && echo "read the secrets file"'
)


class Listener:
    """A TCP listener on 127.0.0.2 that records every connection made to it."""

    def __init__(self):
        self.socket = socket.create_server(("127.0.0.2", 0))
        self.address = f"127.0.0.2:{self.socket.getsockname()[1]}"
        self.connections: list[bytes] = []
        self.socket.settimeout(0.2)
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    def _accept(self) -> None:
        while not self.stopped.is_set():
            try:
                connection, _ = self.socket.accept()
            except TimeoutError:
                continue
            with connection:
                connection.settimeout(1)
                try:
                    self.connections.append(connection.recv(4096))
                except OSError:
                    self.connections.append(b"")

    def close(self) -> None:
        self.stopped.set()
        self.thread.join(timeout=5)
        self.socket.close()


def hub_token(hub: Hub, admin_token: str, user: str, scopes: list[str] | None = None) -> str:
    """A new hub token of ``user`` (made a hub user first if new), with ``scopes`` (None: their roles' scopes)."""
    api = f"{hub.url}/hub/api/users/{user}"
    headers = {"Authorization": f"token {admin_token}"}
    try:
        urllib.request.urlopen(urllib.request.Request(api, method="POST", headers=headers), timeout=30).close()
    except urllib.error.HTTPError as err:
        assert err.code == 409, err  # already a hub user
    body = json.dumps({"note": "test"} if scopes is None else {"note": "test", "scopes": scopes}).encode()
    with urllib.request.urlopen(urllib.request.Request(f"{api}/tokens", body, headers, method="POST"), timeout=30) as r:
        return json.load(r)["token"]
