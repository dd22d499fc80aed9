"""Helpers for the `air` workload tests: the CLI as a real subprocess, workload files, leftover-process checks (on
this machine, and a Ray Job's on every node of a test cluster)."""

from __future__ import annotations

import contextlib
import json
import math
import os
import shutil
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import psutil
import yaml
from ray_cluster import actor_processes, job_processes

REPO = Path(__file__).resolve().parents[2]


class Air:
    """Runs `python -m jupyter_air.cli` as a real subprocess against one AIR_HOME."""

    def __init__(self, home: Path, tracking_uri: str):
        self.home = home
        self.env = {
            **os.environ,
            "AIR_HOME": str(home),
            "MLFLOW_TRACKING_URI": tracking_uri,
            "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),
        }

    def __call__(self, *args: str, timeout: float = 60, check: bool = False, cwd=None) -> subprocess.CompletedProcess:
        result = subprocess.run(
            [sys.executable, "-m", "jupyter_air.cli", *args],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
            cwd=cwd,
        )
        if check and result.returncode != 0:
            raise AssertionError(f"air {' '.join(args)} exited {result.returncode}: {result.stderr}")
        return result

    def popen(self, *args: str) -> subprocess.Popen:
        return subprocess.Popen(
            [sys.executable, "-m", "jupyter_air.cli", *args],
            env=self.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    def json(self, *args: str):
        return json.loads(self(*args, "-o", "json", check=True).stdout)

    def submit(self, path: Path, *extra: str) -> str:
        return self.json("run", "-f", str(path), *extra)["job_run_id"]

    def job(self, job_run_id: str) -> dict:
        return self.json("get", job_run_id)

    def wait(self, job_run_id: str, until=lambda job: job["status"] not in ("PENDING", "RUNNING"), timeout=90):
        """Poll `air get` until `until(job)`; a wait with a generous deadline, not a speed assertion. `air get` is
        asked when the job's rows in jobs.db change, and every 2 s besides (it also reaps a job whose supervisor
        died): a CLI process per look costs a CPU tenth of a second."""
        deadline = time.monotonic() + timeout
        seen, asked_s = None, -math.inf
        while True:
            rows = self._rows(job_run_id)
            if rows != seen or time.monotonic() - asked_s >= 2.0:
                seen, asked_s = rows, time.monotonic()
                job = self.job(job_run_id)
                if until(job):
                    return job
            if time.monotonic() > deadline:
                raise AssertionError(f"job {job_run_id} stuck: {job}")
            time.sleep(0.1)

    def _rows(self, job_run_id: str) -> tuple | None:
        """The job's row and its attempts' rows, read-only."""
        try:
            with contextlib.closing(sqlite3.connect(f"{(self.home / 'jobs.db').as_uri()}?mode=ro", uri=True)) as db:
                args = (job_run_id,)
                return (
                    db.execute("SELECT * FROM jobs WHERE job_run_id = ?", args).fetchall(),
                    db.execute("SELECT * FROM attempts WHERE job_run_id = ?", args).fetchall(),
                )
        except sqlite3.Error:
            return None

    def processes(self) -> list[psutil.Process]:
        """Live processes started for this AIR_HOME (supervisors and workloads inherit it), but for its resident
        MLflow server (it stops when idle)."""
        from resident_servers import resident_pids

        resident = resident_pids(self.home)
        found = []
        for proc in psutil.process_iter():
            try:
                if proc.pid in resident:
                    continue
                if proc.status() != psutil.STATUS_ZOMBIE and proc.environ().get("AIR_HOME") == str(self.home):
                    found.append(proc)
            except psutil.Error:
                continue
        return found

    def assert_no_processes(self, timeout: float = 15) -> None:
        deadline = time.monotonic() + timeout
        while (left := self.processes()) and time.monotonic() < deadline:
            time.sleep(0.2)
        described = []
        for proc in left:
            with contextlib.suppress(psutil.Error):  # said before it is killed: a zombie has no command line
                described.append(proc.cmdline())
                proc.kill()
        assert not left, f"processes left behind: {described}"


def write_workload(folder: Path, name: str = "workload.yaml", **fields) -> Path:
    spec = {"experiment_name": "air-tests", "compute": {"num_accelerators": 0}, **fields}
    path = folder / name
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    return path


def job_spec(folder: Path, **changes) -> dict:
    """A resolved workload (as the job store keeps it) of a command run here, with ``changes``, for tests that
    create a job in a store themselves and run its supervisor in their own process."""
    return {
        "experiment_name": "air-tests-supervisor",
        "command": "true",
        "compute": {"num_accelerators": 0},
        "env_variables": {},
        "parameters": {"lr": 0.1},
        "max_retries": 0,
        "retry_delay_seconds": 0,
        "timeout_minutes": None,
        "mlflow_run_name": None,
        "mlflow_artifact_location": None,
        "code_source": {"root_path": str(folder)},
        **changes,
    }


def embedded(home: Path) -> Air:
    """An `Air` on AIR_HOME with the embedded MLflow store (no MLFLOW_TRACKING_URI), as a user has it."""
    air = Air(home, tracking_uri="")
    air.env.pop("MLFLOW_TRACKING_URI")
    return air


def make_air(home: Path, tracking_uri: str, server: Path | None = None):
    """An `Air` for `home` that, on teardown, fails if any of its processes is left (and kills them); ``server``: the
    record of a resident MLflow server of the store that `home` uses (shared, so never stopped here)."""
    air = Air(home, tracking_uri)
    if server is not None:
        home.mkdir(mode=0o700, exist_ok=True)
        shutil.copy(server, home / server.name)
    yield air
    if (home / "jobs.db").exists():
        air("cancel", "--all")
    air.assert_no_processes()
    if server is not None:
        (home / server.name).unlink(missing_ok=True)
    from resident_servers import stop_all

    stop_all(home)


def nothing_left(job_run_id: str, timeout: float = 30.0) -> list:
    deadline = time.monotonic() + timeout
    while (left := job_processes(job_run_id) + actor_processes("WorkloadAgent")) and time.monotonic() < deadline:
        time.sleep(0.2)
    return left


def ray_job_info(ray_cluster, job_run_id: str):
    from ray.job_submission import JobSubmissionClient

    return JobSubmissionClient(ray_cluster.dashboard_url).get_job_info(job_run_id)
