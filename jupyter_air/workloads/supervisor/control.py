"""Job control shared by the commands: detect dead supervisors, cancel jobs, end MLflow runs left open."""

from __future__ import annotations

import logging
import time

from jupyter_air.tracking.lifecycle import ManagedRun
from jupyter_air.workloads.state.logs import node_dir
from jupyter_air.workloads.state.records import Job, attempt_marker
from jupyter_air.workloads.state.store import JobStore
from jupyter_air.workloads.supervisor.executor import executor_for
from jupyter_air.workloads.supervisor.node import wait_for_pump
from jupyter_air.workloads.supervisor.run_logs import keep_logs

log = logging.getLogger(__name__)

#: Seconds `cancel` waits for the supervisor to stop the workload before stopping it itself.
CANCEL_WAIT_SECONDS = 8.0
#: Ended jobs looked at for what their runner says of them last (the newest first).
_RECENT_JOBS = 20


def reap(store: JobStore) -> list[str]:
    """Mark FAILED every active job whose supervisor is gone (killed, machine restarted, its Ray job ended);
    CANCELED when a cancel was asked for. Returns their ids."""
    reaped = []
    for job in store.list(active_only=True, limit=1_000_000):
        reason = executor_for(job).gone(store, job)
        if reason is None:
            continue
        status, run_status = ("CANCELED", "KILLED") if job.cancel_requested else ("FAILED", "FAILED")
        if store.finish(job.job_run_id, status, reason, open_attempts=run_status):
            _take_over(store, job, run_status, reason)
            reaped.append(job.job_run_id)
    for job in store.list(active_only=False, limit=_RECENT_JOBS):
        if not job.active:
            executor_for(job).observe(store, job)  # a Ray Job's final status, once Ray has it
    return reaped


def cancel(store: JobStore, job: Job, wait_seconds: float = CANCEL_WAIT_SECONDS) -> Job:
    """Stop an active job's whole process tree; the job ends CANCELED and its open MLflow run KILLED."""
    executor = executor_for(job)
    executor.request_cancel(store, job)
    deadline = time.monotonic() + wait_seconds
    while time.monotonic() < deadline:
        current = store.get(job.job_run_id)
        if not current.active:
            return current
        if executor.gone(store, current):
            break
        time.sleep(0.05)
    current = store.get(job.job_run_id)
    reason = "canceled; the supervisor did not stop in time, so air did"
    if store.finish(job.job_run_id, "CANCELED", reason, open_attempts="KILLED"):
        _take_over(store, current, "KILLED", reason)
    return store.get(job.job_run_id)


def _take_over(store: JobStore, job: Job, status: str, reason: str) -> None:
    """Finish for a supervisor that cannot: stop what is left of the attempts it left open (``job`` as read
    before they were closed), then end their MLflow runs with the output kept as the supervisor keeps it
    (``run_logs``: as the job's owner, never through a link, not at all with ``AIR_JOB_LOGS=service``)."""
    open_attempts = [a for a in job.attempts if a.ended_ms is None]
    executor_for(job).stop_leftovers(job)
    for attempt in open_attempts:
        if attempt.mlflow_run_id is None:
            continue
        try:
            wait_for_pump(attempt_marker(job.job_run_id, attempt.attempt))
            run = ManagedRun.adopt(attempt.mlflow_run_id, job.tracking_uri)
            dirs = [node_dir(store.job_dir(job.job_run_id), attempt.attempt, n) for n in range(job.num_nodes)]
            try:
                note = keep_logs(run, job.user, attempt.attempt, dirs)
            except Exception as exc:  # noqa: BLE001 - the run must end whatever happens to its output
                note = f"its output was not uploaded to MLflow ({exc}); `air logs` shows it"
            run.end(status, "; ".join(filter(None, [reason, note])))
        except Exception as exc:  # noqa: BLE001 - the job state is already right; say what is left to do
            log.warning("Could not mark MLflow run %s %s: %s", attempt.mlflow_run_id, status, exc)
