"""Plain data types shared by every GPU source."""

from __future__ import annotations

from dataclasses import dataclass, field

#: Per-GPU metrics, in the order they appear in the REST payload.
GPU_METRICS = (
    "utilization_percent",
    "memory_used_bytes",
    "memory_total_bytes",
    "temperature_celsius",
    "power_watts",
)


@dataclass
class DeviceInfo:
    """One GPU as seen when the source opened; ``error`` is the latest failure, if any."""

    index: int
    uuid: str | None
    name: str | None
    memory_total_bytes: int | None
    error: str | None = None

    def to_json(self) -> dict:
        return {
            "index": self.index,
            "uuid": self.uuid,
            "name": self.name,
            "memory_total_bytes": self.memory_total_bytes,
            "error": self.error,
        }


@dataclass
class GpuProcess:
    """A compute process holding memory on one GPU."""

    gpu_index: int
    pid: int
    name: str | None
    used_memory_bytes: int | None


@dataclass
class Reading:
    """One sample of every GPU: each list is indexed by GPU, ``None`` where the device cannot report."""

    utilization_percent: list[float | None] = field(default_factory=list)
    memory_used_bytes: list[int | None] = field(default_factory=list)
    memory_total_bytes: list[int | None] = field(default_factory=list)
    temperature_celsius: list[float | None] = field(default_factory=list)
    power_watts: list[float | None] = field(default_factory=list)
    errors: list[str | None] = field(default_factory=list)
    processes: list[GpuProcess] = field(default_factory=list)

    @classmethod
    def empty(cls, count: int) -> Reading:
        """A reading of ``count`` GPUs with every value unknown."""
        return cls(*([None] * count for _ in range(len(GPU_METRICS) + 1)))

    def metric(self, name: str) -> list:
        return getattr(self, name)


class GpuUnavailable(Exception):
    """The source cannot report any GPU; ``reason`` says why, for a person."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason
