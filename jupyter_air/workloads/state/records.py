"""What the job store holds: a job, its attempts, their statuses (plain records, no database)."""

from __future__ import annotations

import json
import sqlite3
import time
from dataclasses import asdict, dataclass, field
from typing import Any

from jupyter_air.tracking.naming import SCHEDULE_TAG

ACTIVE = ("PENDING", "RUNNING")
TERMINAL = ("SUCCEEDED", "FAILED", "CANCELED", "TIMED_OUT")


#: The variable of a job's id in the environment of every process of its attempts.
JOB_MARKER = "AIR_JOB_RUN_ID"


def attempt_marker(job_run_id: str, attempt: int) -> dict[str, str]:
    """Environment every process of an attempt inherits: how its leftovers are found, daemons included."""
    return {JOB_MARKER: job_run_id, "AIR_ATTEMPT": str(attempt)}


def now_ms() -> int:
    return int(time.time() * 1000)


@dataclass
class Attempt:
    """One attempt of a job; `status` uses MLflow's run statuses (RUNNING, FINISHED, FAILED, KILLED)."""

    job_run_id: str
    attempt: int
    status: str
    mlflow_run_id: str | None
    mlflow_run_url: str | None
    started_ms: int
    ended_ms: int | None
    pid: int | None
    pid_started: float | None
    exit_code: int | None
    error: str | None
    #: JSON list of where each node ran (Ray attempts): ``[{"node", "hostname", "ip", "ray_node_id", "exit_code"}]``.
    nodes: str | None = None

    @property
    def node_list(self) -> list[dict[str, Any]]:
        return json.loads(self.nodes) if self.nodes else []

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        for key in ("job_run_id", "pid", "pid_started"):
            data.pop(key)
        data["nodes"] = self.node_list
        return data


@dataclass
class Job:
    """One submitted workload and its state."""

    job_run_id: str
    experiment_name: str
    experiment_id: str | None
    status: str
    workload: dict[str, Any]
    source: str
    user: str
    executor: str
    num_accelerators: int
    max_retries: int
    gpus: list[int]
    submitted_ms: int
    started_ms: int | None
    ended_ms: int | None
    supervisor_pid: int | None
    supervisor_started: float | None
    cancel_requested: bool
    exit_code: int | None
    error: str | None
    tracking_uri: str | None = None
    #: A Ray Job's job server, and Ray's last status of it (the job's supervisor runs as a Ray Job).
    ray_job_url: str | None = None
    ray_status: str | None = None
    attempts: list[Attempt] = field(default_factory=list)

    @property
    def active(self) -> bool:
        return self.status in ACTIVE

    @property
    def schedule(self) -> str | None:
        """The name of the schedule that fired it, if one did."""
        return self.workload.get("tags", {}).get(SCHEDULE_TAG)

    @property
    def num_nodes(self) -> int:
        """Nodes every attempt runs on (1 on this machine)."""
        return self.workload["compute"].get("num_nodes") or 1

    @property
    def duration_seconds(self) -> float | None:
        if self.started_ms is None:
            return None
        return round(((self.ended_ms or now_ms()) - self.started_ms) / 1000, 3)


def job_from_row(row: sqlite3.Row, attempts: list[Attempt]) -> Job:
    data = dict(row)
    data["workload"] = json.loads(data["workload"])
    data["gpus"] = json.loads(data["gpus"] or "[]")
    data["cancel_requested"] = bool(data["cancel_requested"])
    return Job(**data, attempts=attempts)


#: What became of one fire time of a schedule: SUBMITTING while its job is being submitted, then SUBMITTED (its job
#: started), SKIPPED (not run: ``reason`` says why) or FAILED (its job could not be submitted: ``reason``).
FIRE_OUTCOMES = ("SUBMITTING", "SUBMITTED", "SKIPPED", "FAILED")


@dataclass
class Fire:
    """One fire time of a schedule and its job."""

    name: str
    scheduled_ms: int
    fired_ms: int
    outcome: str
    job_run_id: str | None = None
    reason: str | None = None
    #: Fire times this fire stands for (1, or more for a catch-up of missed ones).
    windows: int = 1
    manual: bool = False

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data.pop("name")
        return data


@dataclass
class Schedule:
    """A workload fired by time (``workload``: what each fire submits), named after its experiment."""

    name: str
    expression: str
    timezone: str
    paused: bool
    catchup: str
    max_concurrent_runs: int
    workload: dict[str, Any]
    source: str
    user: str
    ray_address: str | None
    next_fire_ms: int | None
    created_ms: int
    updated_ms: int
    fires: list[Fire] = field(default_factory=list)

    @property
    def pause_status(self) -> str:
        return "PAUSED" if self.paused else "UNPAUSED"


def schedule_from_row(row: sqlite3.Row, fires: list[Fire]) -> Schedule:
    data = dict(row)
    data["workload"] = json.loads(data["workload"])
    data["paused"] = bool(data["paused"])
    return Schedule(**data, fires=fires)


def fire_from_row(row: sqlite3.Row) -> Fire:
    return Fire(**{**dict(row), "manual": bool(row["manual"])})
