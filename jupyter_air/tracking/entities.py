"""Runs, experiments and metrics as MLflow's REST API describes them, and the error its requests raise."""

from __future__ import annotations

from dataclasses import dataclass, field


class TrackingError(Exception):
    """A tracking request failed; the message is MLflow's own (``RESOURCE_DOES_NOT_EXIST: Run ... not found``)."""

    def __init__(self, message: str, error_code: str = "INTERNAL_ERROR"):
        super().__init__(message)
        self.message = message
        self.error_code = error_code


@dataclass(frozen=True)
class Metric:
    key: str
    value: float
    timestamp: int
    step: int = 0

    @classmethod
    def of(cls, data: dict) -> Metric:
        return cls(data["key"], float(data["value"]), int(data.get("timestamp", 0)), int(data.get("step", 0)))


@dataclass(frozen=True)
class Experiment:
    experiment_id: str
    name: str
    artifact_location: str = ""
    lifecycle_stage: str = "active"

    @classmethod
    def of(cls, data: dict) -> Experiment:
        return cls(
            str(data["experiment_id"]),
            data["name"],
            data.get("artifact_location", ""),
            data.get("lifecycle_stage", "active"),
        )


@dataclass(frozen=True)
class RunInfo:
    run_id: str
    experiment_id: str
    run_name: str
    status: str
    artifact_uri: str
    start_time: int | None = None  # epoch milliseconds
    end_time: int | None = None


@dataclass(frozen=True)
class RunData:
    """A run's latest metrics (with their step and time), its params and tags."""

    metrics: list[Metric] = field(default_factory=list)
    params: dict[str, str] = field(default_factory=dict)
    tags: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Run:
    info: RunInfo
    data: RunData

    @classmethod
    def of(cls, data: dict) -> Run:
        """From the JSON of ``runs/get`` (or MLflow's ``Run.to_dictionary()`` turned into that shape)."""
        info, body = data["info"], data.get("data", {})
        return cls(
            RunInfo(
                info.get("run_id") or info["run_uuid"],
                str(info["experiment_id"]),
                info.get("run_name", ""),
                info.get("status", "RUNNING"),
                info.get("artifact_uri", ""),
                _ms(info.get("start_time")),
                _ms(info.get("end_time")),
            ),
            RunData(
                [Metric.of(m) for m in body.get("metrics", [])],
                {p["key"]: p.get("value", "") for p in body.get("params", [])},
                {t["key"]: t.get("value", "") for t in body.get("tags", [])},
            ),
        )


def _ms(value) -> int | None:
    """An epoch-millisecond time as MLflow's REST API writes it (a string of digits), or None."""
    return int(value) if value not in (None, "") else None
