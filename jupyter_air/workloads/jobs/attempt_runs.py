"""A job found from the MLflow run of one of its attempts (the run's ``air.job_run_id`` tag): for ``attach`` by
run id, and for the run card's Stop on a remote call's run."""

from __future__ import annotations

from jupyter_air.tracking.entities import TrackingError
from jupyter_air.tracking.naming import JOB_TAG, REMOTE_TAG
from jupyter_air.tracking.store import tracker
from jupyter_air.workloads.jobs.jobs import Jobs, NotActive


def job_of_run(run_id: str, remote_only: bool = False) -> str | None:
    """The job run id the MLflow run ``run_id`` was an attempt of, if it is a run at all (and, with
    ``remote_only``, an attempt of a remote call)."""
    try:
        tags = tracker().get_run(run_id).data.tags
    except TrackingError:
        return None
    if remote_only and tags.get(REMOTE_TAG) != "true":
        return None
    return tags.get(JOB_TAG)


def cancel_remote_call(run_id: str) -> bool:
    """The card's Stop for a remote call: cancel the job whose attempt ``run_id`` is; False for any other run, or a
    job that has already ended."""
    job_run_id = job_of_run(run_id, remote_only=True)
    if job_run_id is None:
        return False
    try:
        Jobs().cancel(job_run_id)
    except NotActive:
        return False
    return True
