"""The detached process that runs one job's attempts (here, or on Ray nodes), each recorded as its own MLflow run."""

from __future__ import annotations

import contextlib
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
from jupyter_air.cluster.errors import ClusterError
from jupyter_air.home import UnusableDatabase, air_home, disk_full, full_disk_message, says_disk_full
from jupyter_air.tracking.lifecycle import ManagedRun
from jupyter_air.tracking.naming import ATTEMPT_TAG, GPUS_TAG, JOB_TAG, NODE_TAG, node_name
from jupyter_air.tracking.store import ensure_experiment, tracker, tracking_uri
from jupyter_air.workloads.state.ledger import GpuLedger
from jupyter_air.workloads.state.records import Job, attempt_marker, now_ms
from jupyter_air.workloads.state.store import JobStore
from jupyter_air.workloads.supervisor import relay
from jupyter_air.workloads.supervisor.executor import ENVIRONMENT_FILE, executor_for
from jupyter_air.workloads.supervisor.full_disk import StateWrites
from jupyter_air.workloads.supervisor.run_logs import keep_logs
from jupyter_air.workloads.supervisor.runners import AttemptContext
from jupyter_air.workloads.supervisor.service_secrets import load_service_secrets

log = logging.getLogger("jupyter_air.workloads.supervisor.process")

#: Seconds a supervisor waits for AIR_HOME's MLflow server to answer while it starts (it takes 3-20 s, a busy
#: machine longer), rather than import MLflow itself.
SERVER_WAIT_SECONDS = 60.0
_MLFLOW_STATUS = {"SUCCEEDED": "FINISHED", "FAILED": "FAILED", "TIMED_OUT": "FAILED", "CANCELED": "KILLED"}
#: What /bin/sh means by these exit codes (the log shows its own words).
_EXIT_HINTS = {
    126: " (a program that cannot be run: not executable, or a folder?)",
    127: " (command not found? check the spelling of the program and PATH)",
}
#: Added to the reason of an attempt whose output could not be kept as its run's artifacts.
NOT_UPLOADED = "its output was not uploaded to MLflow (no room on the disk); `air logs` shows it"


@dataclass
class Outcome:
    """How one attempt ended, as a job status."""

    status: str
    exit_code: int | None = None
    error: str | None = None

    @property
    def disk_full(self) -> bool:
        """The attempt ended because a disk was full: retrying is pointless, uploading its output too."""
        return self.error is not None and says_disk_full(self.error)


class Supervisor:
    """Runs attempts until one succeeds or retries run out, honours cancel and timeout; what runs an attempt, and
    where, is the executor's runner (``runners``)."""

    def __init__(self, store: JobStore, job_run_id: str, user_umask: int | None = None):
        self.store = store
        self.job_run_id = job_run_id
        self.user_umask = user_umask
        self.cancel = threading.Event()
        self.executor = executor_for(store.get(job_run_id))
        self.writes: StateWrites | None = None
        self._open_run = None  # the attempt's ManagedRun until it has ended
        self.tracking = None

    def run(self) -> int:
        self.writes = StateWrites(self.store.home, self.store.job_dir(self.job_run_id), self.job_run_id)
        try:
            try:
                outcome = self._run(self.store.get(self.job_run_id))
            except Exception as exc:  # noqa: BLE001 - any failure must end the job, not leave it RUNNING
                with contextlib.suppress(OSError):  # this log may be on the full disk
                    traceback.print_exc()
                outcome = Outcome("FAILED", error=self._failure(exc))
                self.writes.until_recorded(lambda: self._end_open_attempts(outcome))
            self.writes.until_recorded(
                lambda: self.store.finish(self.job_run_id, outcome.status, outcome.error, outcome.exit_code)
            )
            self.writes.until_recorded(lambda: GpuLedger(self.store).release(self.job_run_id))  # the next in line's
        finally:
            self.writes.reserve.release()
        return 0 if outcome.status == "SUCCEEDED" else 1

    def _failure(self, exc: Exception) -> str:
        """The job's reason for an error of the supervisor itself."""
        if disk_full(exc, self.store.home):
            return full_disk_message(self.store.home)
        if isinstance(exc, UnusableDatabase):
            return str(exc)
        return f"supervisor error: {type(exc).__name__}: {exc}"

    def _run(self, job: Job) -> Outcome:
        if job.cancel_requested or self.cancel.is_set():
            return Outcome("CANCELED", error="canceled before it started")

        spec = job.workload
        # MLflow's REST API where a server can be asked (AIR_HOME's own waited for while it starts: a supervisor is
        # background work, and importing MLflow costs it 2-3 CPU-seconds): MLflow is not imported then
        self.tracking = tracker(wait_seconds=SERVER_WAIT_SECONDS)
        experiment_id = ensure_experiment(spec["experiment_name"], spec["mlflow_artifact_location"], self.tracking)
        self.store.update(self.job_run_id, experiment_id=experiment_id)
        outcome = Outcome("FAILED", error="no attempt ran")
        for attempt in range(job.max_retries + 1):
            if (attempt and self.cancel.wait(spec.get("retry_delay_seconds", 0))) or self.cancel.is_set():
                return Outcome("CANCELED", outcome.exit_code, f"canceled before attempt {attempt}")
            outcome = self._attempt(job, experiment_id, attempt)
            if outcome.status in ("SUCCEEDED", "CANCELED") or outcome.disk_full:
                break
        return outcome

    def _attempt(self, job: Job, experiment_id: str, attempt: int) -> Outcome:
        marker = attempt_marker(self.job_run_id, attempt)
        context = AttemptContext(job.workload, attempt, marker, self.user_umask, self.store, self.job_run_id, job.user)
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
        spec = job.workload
        tags = {
            JOB_TAG: self.job_run_id,
            ATTEMPT_TAG: str(attempt),
            NODE_TAG: node_name(),
            "mlflow.user": job.user,
            "mlflow.source.name": job.source,
            "mlflow.source.type": "JOB",
            GPUS_TAG: str(job.num_accelerators),  # on every node: what `air usage` counts GPU-hours from
            **spec.get("tags", {}),  # what the kind of work adds (a notebook call: its function, its notebook)
        }
        name = spec.get("mlflow_run_name")  # None: MLflow names it
        name = f"{name} (retry {attempt})" if name and attempt else name  # the runs table tells retries apart
        run = ManagedRun.create(
            experiment_id, run_name=name, tags=tags, params=spec["parameters"], tracking=self.tracking
        )
        self._open_run = run
        with run.guard():  # from here on, any failure ends the run FAILED
            self.store.start_attempt(self.job_run_id, attempt, run.run_id, None)
            overrides = {
                "PYTHONUNBUFFERED": os.environ.get("PYTHONUNBUFFERED", "1"),
                **spec["env_variables"],
                "MLFLOW_TRACKING_URI": tracking_uri(),
                "MLFLOW_EXPERIMENT_ID": experiment_id,
                "MLFLOW_RUN_ID": run.run_id,
            }
            node.start(overrides, run)
            with self.writes.unless_disk_full():  # its output may fill the disk at once: the attempt's end says so
                self.store.update_attempt(self.job_run_id, attempt, pid=node.pid, pid_started=node.started)
                self._record_nodes(attempt, node)
                if attempt == 0:
                    self.store.update(self.job_run_id, status="RUNNING", started_ms=now_ms(), error=None)
                run.describe()  # the link, once the command runs: it does not need it
                self.store.update_attempt(self.job_run_id, attempt, mlflow_run_url=run.url)
            try:
                outcome = self._wait(node, spec.get("timeout_minutes"), attempt)
            finally:
                node.finish()
            self.writes.until_recorded(lambda: self._record_nodes(attempt, node))
            self._end_run(run, node, job.user, attempt, outcome)
        self._open_run = None
        self.writes.until_recorded(
            lambda: self.store.update_attempt(
                self.job_run_id,
                attempt,
                status=_MLFLOW_STATUS[outcome.status],
                ended_ms=now_ms(),
                exit_code=outcome.exit_code,
                error=outcome.error,
            )
        )
        return outcome

    def _end_run(self, run, node, owner: str, attempt: int, outcome: Outcome) -> None:
        """Keep the output as the run's artifacts (``run_logs``) and end the run. On a full disk the job's end is
        recorded first (a small row update, in the room the reserve gave back) and the upload, as large as the log,
        is skipped."""
        error = outcome.error
        if outcome.disk_full:
            self.writes.reserve.release()
            self.writes.until_recorded(
                lambda: self.store.finish(
                    self.job_run_id, outcome.status, outcome.error, outcome.exit_code, open_attempts="FAILED"
                )
            )
            error = f"{outcome.error}; {NOT_UPLOADED}"
        else:
            try:
                error = "; ".join(filter(None, [outcome.error, keep_logs(run, owner, attempt, node.log_dirs)]))
            except Exception as exc:
                if not disk_full(exc, self.store.home):
                    raise
                error = "; ".join(filter(None, [outcome.error, NOT_UPLOADED]))
        self.writes.until_recorded(lambda: run.end(_MLFLOW_STATUS[outcome.status], error))

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
        return Outcome("FAILED", code, f"command exited with code {code}{_EXIT_HINTS.get(code, '')}")

    def _end_open_attempts(self, outcome: Outcome) -> None:
        job = self.store.get(self.job_run_id)
        for attempt in job.attempts:
            if attempt.ended_ms is not None:
                continue
            procs.stop_tree(attempt.pid, attempt.pid_started, marker=attempt_marker(self.job_run_id, attempt.attempt))
            self.store.update_attempt(
                self.job_run_id, attempt.attempt, status="FAILED", ended_ms=now_ms(), error=outcome.error
            )
        if self._open_run is not None:  # its own end failed (the store refused it): end it now
            self._open_run.end("FAILED", outcome.error)


def main(argv: list[str]) -> None:
    """Entry point of the supervisor: ``<python> -c ... JOB_RUN_ID [AIR_HOME]``, detached here (LocalExecutor,
    AIR_HOME from the environment) or as a Ray Job (``ray_jobs``: AIR_HOME given, the submitter's environment read
    from the job's folder, this process's PID and Ray's status RUNNING recorded: a look at the job asks Ray
    only once this process is gone). A Ray Job's supervisor is forked warm where it can be (:mod:`.relay`)."""
    user_umask = os.umask(0o077)  # what the supervisor writes is owner-only; the workload keeps the user's umask
    procs.become_subreaper()  # orphans of the workload stay our descendants while we live
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    job_run_id, *home = argv
    if home:
        store = JobStore(Path(home[0]))
        saved = json.loads((store.job_dir(job_run_id) / ENVIRONMENT_FILE).read_text())
        os.environ.update({k: v for k, v in saved.items() if not k.startswith("RAY_")})
        forked = relay.fork(job_run_id, saved, store, user_umask)
        if forked is not None:
            raise SystemExit(relay.follow(store, job_run_id, forked))
        # the Ray Job's driver: while it runs, Ray's status of the job is RUNNING (observers need not ask Ray)
        me = {"supervisor_pid": os.getpid(), "supervisor_started": procs.start_time(os.getpid())}
        store.update(job_run_id, ray_status="RUNNING", **me)
    else:
        store = JobStore(air_home())
    load_service_secrets()  # on the team's job service: its credentials, in memory only
    supervisor = Supervisor(store, job_run_id, user_umask)
    relay.watch(supervisor.cancel)  # a supervisor forked for a Ray Job's entrypoint: canceled once Ray killed it
    # SIGTERM and SIGINT cancel the job: the process's handlers, set here, so that a Supervisor run inside another
    # process (a test's) leaves that process's own alone
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: supervisor.cancel.set())
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    raise SystemExit(supervisor.run())
