"""The detached process that runs one job's attempts (here, or on Ray nodes), each recorded as its own MLflow run."""

from __future__ import annotations

import json
import logging
import os
import signal
import threading
import time
import traceback
from dataclasses import dataclass
from pathlib import Path

from jupyter_air import procs

from .executor import ENVIRONMENT_FILE, executor_for
from .runners import AttemptContext
from .store import Job, JobStore, now_ms

log = logging.getLogger("jupyter_air.workloads.supervisor")

_MLFLOW_STATUS = {"SUCCEEDED": "FINISHED", "FAILED": "FAILED", "TIMED_OUT": "FAILED", "CANCELED": "KILLED"}


@dataclass
class Outcome:
    """How one attempt ended, as a job status."""

    status: str
    exit_code: int | None = None
    error: str | None = None


class Supervisor:
    """Runs attempts until one succeeds or retries run out, honours cancel and timeout; what runs an attempt, and
    where, is the executor's runner (``runners``)."""

    def __init__(self, store: JobStore, job_run_id: str, user_umask: int | None = None):
        self.store = store
        self.job_run_id = job_run_id
        self.user_umask = user_umask
        self.cancel = threading.Event()
        self.executor = executor_for(store.get(job_run_id))

    def run(self) -> int:
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, lambda *_: self.cancel.set())
        signal.signal(signal.SIGHUP, signal.SIG_IGN)
        job = self.store.get(self.job_run_id)
        try:
            outcome = self._run(job)
        except Exception as exc:  # noqa: BLE001 - any failure must end the job, not leave it RUNNING
            traceback.print_exc()
            outcome = Outcome("FAILED", error=f"supervisor error: {type(exc).__name__}: {exc}")
            self._end_open_attempts(outcome)
        self.store.finish(self.job_run_id, outcome.status, outcome.error, outcome.exit_code)
        return 0 if outcome.status == "SUCCEEDED" else 1

    def _run(self, job: Job) -> Outcome:
        if job.cancel_requested or self.cancel.is_set():
            return Outcome("CANCELED", error="canceled before it started")
        from jupyter_air.tracking.store import ensure_experiment

        spec = job.workload
        experiment_id = ensure_experiment(spec["experiment_name"], spec["mlflow_artifact_location"])
        self.store.update(self.job_run_id, experiment_id=experiment_id)
        outcome = Outcome("FAILED", error="no attempt ran")
        for attempt in range(job.max_retries + 1):
            if attempt and self.cancel.wait(spec.get("retry_delay_seconds", 0)):
                return Outcome("CANCELED", outcome.exit_code, f"canceled before attempt {attempt}")
            if self.cancel.is_set():
                return Outcome("CANCELED", outcome.exit_code, f"canceled before attempt {attempt}")
            outcome = self._attempt(job, experiment_id, attempt)
            if outcome.status in ("SUCCEEDED", "CANCELED"):
                break
        return outcome

    def _attempt(self, job: Job, experiment_id: str, attempt: int) -> Outcome:
        from jupyter_air.cluster.errors import ClusterError

        marker = attempt_marker(self.job_run_id, attempt)
        context = AttemptContext(job.workload, attempt, marker, self.user_umask, self.store, self.job_run_id)
        node = self.executor.runner(context)
        try:
            try:  # where it runs comes first: a refusal leaves no run behind
                if not node.place(self.cancel, self._note):
                    return Outcome("CANCELED", error=f"canceled while attempt {attempt} waited for its resources")
            except ClusterError as exc:
                return Outcome("FAILED", error=str(exc))
            return self._tracked(job, experiment_id, attempt, node)
        finally:
            node.finish()  # background children the command left, the rest of its output, the nodes

    def _note(self, message: str) -> None:
        self.store.update(self.job_run_id, error=message)

    def _tracked(self, job: Job, experiment_id: str, attempt: int, node) -> Outcome:
        from jupyter_air.tracking.lifecycle import ManagedRun
        from jupyter_air.tracking.naming import NODE_TAG, node_name
        from jupyter_air.tracking.store import tracking_uri

        spec = job.workload
        tags = {
            "air.job_run_id": self.job_run_id,
            "air.attempt": str(attempt),
            NODE_TAG: node_name(),
            "mlflow.user": job.user,
            "mlflow.source.name": job.source,
            "mlflow.source.type": "JOB",
        }
        name = spec["mlflow_run_name"] + (f" (retry {attempt})" if attempt else "")  # the runs table tells them apart
        run = ManagedRun.create(experiment_id, run_name=name, tags=tags, params=spec["parameters"])
        with run.guard():  # from here on, any failure ends the run FAILED
            run.describe()
            self.store.start_attempt(self.job_run_id, attempt, run.run_id, run.url)
            overrides = {
                "PYTHONUNBUFFERED": os.environ.get("PYTHONUNBUFFERED", "1"),
                **spec["env_variables"],
                "MLFLOW_TRACKING_URI": tracking_uri(),
                "MLFLOW_EXPERIMENT_ID": experiment_id,
                "MLFLOW_RUN_ID": run.run_id,
            }
            node.start(overrides, run)
            self.store.update_attempt(self.job_run_id, attempt, pid=node.pid, pid_started=node.started)
            self._record_nodes(attempt, node)
            if attempt == 0:
                self.store.update(self.job_run_id, status="RUNNING", started_ms=now_ms(), error=None)
            try:
                outcome = self._wait(node, spec.get("timeout_minutes"), attempt)
            finally:
                node.finish()
            self._record_nodes(attempt, node)
            for index, directory in enumerate(node.log_dirs):
                run.upload(sorted(directory.glob("*")), f"logs/attempt_{attempt}/node_{index}")
            run.end(_MLFLOW_STATUS[outcome.status], outcome.error)
        self.store.update_attempt(
            self.job_run_id,
            attempt,
            status=_MLFLOW_STATUS[outcome.status],
            ended_ms=now_ms(),
            exit_code=outcome.exit_code,
            error=outcome.error,
        )
        return outcome

    def _record_nodes(self, attempt: int, node) -> None:
        if node.nodes is not None:
            self.store.update_attempt(self.job_run_id, attempt, nodes=json.dumps(node.nodes))

    def _wait(self, node, timeout_minutes, attempt: int) -> Outcome:
        deadline = time.monotonic() + timeout_minutes * 60 if timeout_minutes else None
        while (code := node.wait(timeout=0.1)) is None:
            if self.cancel.is_set():
                return Outcome("CANCELED", node.stop(), f"attempt {attempt} canceled")
            if node.problem:
                return Outcome("FAILED", node.stop(), f"{node.problem}; the workload was stopped")
            if deadline is not None and time.monotonic() > deadline:
                return Outcome(
                    "TIMED_OUT", node.stop(), f"attempt {attempt} ran past timeout_minutes={timeout_minutes}"
                )
        if node.problem:
            return Outcome("FAILED", code, node.problem)
        if code == 0:
            return Outcome("SUCCEEDED", 0)
        if code < 0:
            return Outcome("FAILED", code, f"command killed by {signal.Signals(-code).name}")
        return Outcome("FAILED", code, f"command exited with code {code}")

    def _end_open_attempts(self, outcome: Outcome) -> None:
        job = self.store.get(self.job_run_id)
        for attempt in job.attempts:
            if attempt.ended_ms is not None:
                continue
            procs.stop_tree(attempt.pid, attempt.pid_started, marker=attempt_marker(self.job_run_id, attempt.attempt))
            self.store.update_attempt(
                self.job_run_id, attempt.attempt, status="FAILED", ended_ms=now_ms(), error=outcome.error
            )


def attempt_marker(job_run_id: str, attempt: int) -> dict[str, str]:
    """Environment every process of an attempt inherits: how its leftovers are found, daemons included."""
    return {"AIR_JOB_RUN_ID": job_run_id, "AIR_ATTEMPT": str(attempt)}


def main(argv: list[str]) -> None:
    """Entry point of the supervisor: ``<python> -c ... JOB_RUN_ID [AIR_HOME]``, detached here (LocalExecutor,
    AIR_HOME from the environment) or as a Ray Job (``ray_jobs``: AIR_HOME given, the submitter's environment read
    from the job's folder, this process's PID recorded for a look at it when Ray cannot be asked)."""
    from jupyter_air.home import air_home

    user_umask = os.umask(0o077)  # what the supervisor writes is owner-only; the workload keeps the user's umask
    procs.become_subreaper()  # orphans of the workload stay our descendants while we live
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    job_run_id, *home = argv
    if home:
        store = JobStore(Path(home[0]))
        saved = json.loads((store.job_dir(job_run_id) / ENVIRONMENT_FILE).read_text())
        os.environ.update({k: v for k, v in saved.items() if not k.startswith("RAY_")})
        store.update(job_run_id, supervisor_pid=os.getpid(), supervisor_started=procs.start_time(os.getpid()))
    else:
        store = JobStore(air_home())
    raise SystemExit(Supervisor(store, job_run_id, user_umask).run())
