"""Plain data types shared by every GPU source, and the contract a source fulfils."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

#: Per-GPU time series of a reading, in the order they appear in the REST payload.
SERIES_METRICS = ("utilization_percent", "memory_used_bytes", "temperature_celsius", "power_watts")


@dataclass(frozen=True)
class DeviceInfo:
    """One GPU as seen when the source opened; ``error`` says why it could not be opened, if so."""

    index: int
    uuid: str | None
    name: str | None
    memory_total_bytes: int | None
    error: str | None = None


@dataclass(frozen=True)
class GpuProcess:
    """A compute process holding memory on one GPU."""

    gpu_index: int
    pid: int
    name: str | None
    used_memory_bytes: int | None


@dataclass
class Reading:
    """One sample of every GPU: each list is indexed by GPU, ``None`` where the device cannot report.

    ``errors[i]`` says why GPU ``i`` gave no values in this sample (lost, not opened), else ``None``.
    A source builds a new reading per sample and never changes it once returned.
    """

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
        return cls(*([None] * count for _ in range(6)))


class GpuSource(Protocol):
    """What the sampler, ``%air_gpu``, the CLI and system metrics need from a source of GPU figures."""

    name: str
    available: bool
    reason: str | None
    devices: list[DeviceInfo]

    def read(self) -> Reading:
        """One sample of every device (NVML calls and the like: never on an event loop)."""

    def energy_millijoules(self) -> list[int | None]:
        """Each device's total energy counter (mJ since the driver loaded), ``None`` where it has none."""

    def close(self) -> None:
        """Release the source (NVML shutdown)."""


class GpuUnavailable(Exception):
    """The source cannot report any GPU; ``reason`` says why, for a person."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason
