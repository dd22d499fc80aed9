"""The stable JSON shapes of a job run (keys are only ever added), for `air -o json` and the jobs routes alike."""

from __future__ import annotations

import json
from typing import Any

from jupyter_air.tracking.naming import SCHEDULE_TAG
from jupyter_air.workloads.state.records import Attempt, Job


def job_summary(job: Job) -> dict[str, Any]:
    """One job run as `air list`, `air run` and `air cancel` print it (and the base of :func:`job_detail`)."""
    latest = job.attempts[-1] if job.attempts else None
    return {
        "job_run_id": job.job_run_id,
        "status": job.status,
        "experiment_name": job.experiment_name,
        "experiment_id": job.experiment_id,
        "user": job.user,
        "executor": job.executor,
        "submitted_ms": job.submitted_ms,
        "started_ms": job.started_ms,
        "ended_ms": job.ended_ms,
        "duration_seconds": job.duration_seconds,
        "num_attempts": len(job.attempts),
        "max_retries": job.max_retries,
        "mlflow_run_id": latest.mlflow_run_id if latest else None,
        "num_accelerators": job.num_accelerators,
        "gpus": job.gpus,
        "exit_code": job.exit_code,
        "error": job.error,
        "schedule_name": job.schedule,
    }


def ray_job(job: Job) -> dict[str, Any] | None:
    """The Ray Job that runs the job's supervisor (its submission id is the job run id), None for another one."""
    if job.ray_job_url is None:
        return None
    return {"submission_id": job.job_run_id, "status": job.ray_status, "job_server": job.ray_job_url}


def job_detail(job: Job) -> dict[str, Any]:
    """One job run as `air get` prints it: the summary plus the node count, the Ray Job, the workload and every
    attempt (each with where its nodes ran)."""
    return {
        **job_summary(job),
        "num_nodes": job.num_nodes,
        "ray_job": ray_job(job),
        "source": job.source,
        "workload": job.workload,
        "attempts": [a.to_json() for a in job.attempts],
    }


def job_json(job: Job, detail: bool = True) -> dict[str, Any]:
    """:func:`job_detail` (or :func:`job_summary` with ``detail=False``)."""
    return job_detail(job) if detail else job_summary(job)


def job_from_json(data: dict[str, Any]) -> Job:
    """The job a :func:`job_detail` (or a jobs route's summary, which has ``attempts``) describes, as a record to
    print: what a job service answers, shown as `air` shows its own jobs."""
    job_run_id = data["job_run_id"]
    attempts = [
        Attempt(
            **{k: a.get(k) for k in ("attempt", "status", "mlflow_run_id", "started_ms", "ended_ms", "exit_code")},
            job_run_id=job_run_id,
            mlflow_run_url=a.get("url") or a.get("mlflow_run_url"),
            pid=None,
            pid_started=None,
            error=a.get("error"),
            nodes=json.dumps(a["nodes"]) if a.get("nodes") else None,
        )
        for a in data.get("attempts", [])
    ]
    ray = data.get("ray_job") or {}
    return Job(
        **{k: data.get(k) for k in _SUMMARY_FIELDS},
        workload=data.get("workload")
        or {"compute": {"num_nodes": data.get("num_nodes", 1)}, "tags": {SCHEDULE_TAG: data.get("schedule_name")}},
        source=data.get("source", ""),
        supervisor_pid=None,
        supervisor_started=None,
        cancel_requested=False,
        ray_job_url=ray.get("job_server"),
        ray_status=ray.get("status"),
        attempts=attempts,
    )


_SUMMARY_FIELDS = [
    "job_run_id",
    "experiment_name",
    "experiment_id",
    "status",
    "user",
    "executor",
    "num_accelerators",
    "max_retries",
    "gpus",
    "submitted_ms",
    "started_ms",
    "ended_ms",
    "exit_code",
    "error",
]
