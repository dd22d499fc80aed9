"""Job control shared by the commands: detect dead supervisors, cancel jobs, end MLflow runs left open."""

from __future__ import annotations

import logging
import sys
import time

from .executor import executor_for
from .store import Job, JobStore, now_ms

log = logging.getLogger(__name__)

#: Seconds `cancel` waits for the supervisor to stop the workload before stopping it itself.
CANCEL_WAIT_SECONDS = 8.0


def reap(store: JobStore) -> list[str]:
    """Mark FAILED every active job whose supervisor is gone (killed, machine restarted); returns their ids."""
    reaped = []
    for job in store.list(active_only=True, limit=1_000_000):
        executor = executor_for(job)
        if executor.is_alive(job):
            continue
        who = f"supervisor process {job.supervisor_pid}" if job.supervisor_pid else "supervisor"
        reason = f"{who} is gone (killed, or the machine restarted) while the job was {job.status}"
        if store.finish(job.job_run_id, "FAILED", reason):
            executor.stop_leftovers(job)
            _end_attempts(store, job, "FAILED", reason)
            reaped.append(job.job_run_id)
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
        if not executor.is_alive(current):
            break
        time.sleep(0.05)
    current = store.get(job.job_run_id)
    if store.finish(job.job_run_id, "CANCELED", "canceled; the supervisor did not stop in time, so air did"):
        executor.stop_leftovers(current)
        _end_attempts(store, current, "KILLED", "canceled")
    return store.get(job.job_run_id)


def _end_attempts(store: JobStore, job: Job, status: str, reason: str) -> None:
    open_runs = []
    for attempt in job.attempts:
        if attempt.ended_ms is None:
            store.update_attempt(job.job_run_id, attempt.attempt, status=status, ended_ms=now_ms(), error=reason)
            if attempt.mlflow_run_id:
                open_runs.append(attempt.mlflow_run_id)
    if not open_runs:
        return
    try:
        from jupyter_air.tracking.store import client

        mlflow_client = client()
        for run_id in open_runs:
            mlflow_client.set_terminated(run_id, status)
    except Exception as exc:  # noqa: BLE001 - the job state is already right; say what is left to do
        print(f"warning: could not mark MLflow run(s) {', '.join(open_runs)} {status}: {exc}", file=sys.stderr)
