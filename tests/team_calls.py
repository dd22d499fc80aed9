"""The team stack of the air-jobs tests (a hub, its air-jobs service on a team job store and MLflow store) and the
ways its users call the service: HTTP with their hub token, their Jupyter server's client, `air` in their terminal."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import urllib.error
import urllib.request

from jupyter_air.team.client import ServiceJobs
from jupyter_air.team.stack import Hub
from jupyter_air.workloads.jobs import Jobs
from jupyter_air.workloads.logs import OUTPUT, node_dir


@contextlib.contextmanager
def team_hub(folder):
    """The hub (not yet ready: ``hub.ready()`` waits) with its air-jobs service on a job store and an MLflow store in
    ``folder``; stopped, every process of it, on the way out."""
    hub = Hub(folder, {"AIR_HOME": str(folder / "air"), "MLFLOW_TRACKING_URI": f"sqlite:///{folder / 'mlflow.db'}"})
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
