"""Chooses and opens the GPU source: ``auto`` (NVML if it loads, else none), ``nvml``, ``simulated`` or ``none``."""

from __future__ import annotations

import logging

from .nvml import NvmlSource
from .simulated import SimulatedSource
from .types import GpuUnavailable, Reading

log = logging.getLogger(__name__)

SOURCE_KINDS = ("auto", "nvml", "simulated", "none")


class NoGpuSource:
    """No GPU to report; ``reason`` says why."""

    name = "none"
    devices: list = []
    available = False

    def __init__(self, reason: str):
        self.reason = reason

    def read(self) -> Reading:
        return Reading()

    def close(self) -> None:
        pass


def open_source(kind: str = "auto", simulated_gpus: int = 2):
    """Open the GPU source named ``kind``; a source that cannot start becomes a ``NoGpuSource`` with its reason."""
    if kind not in SOURCE_KINDS:
        raise ValueError(f"Unknown GPU source {kind!r}: choose one of {', '.join(SOURCE_KINDS)}.")
    if kind == "none":
        return NoGpuSource("GPU monitoring is turned off on this server (gpu_source = 'none').")
    source = SimulatedSource(simulated_gpus) if kind == "simulated" else NvmlSource()
    try:
        source.open()
    except GpuUnavailable as err:
        log.info("No GPU source: %s", err.reason)
        return NoGpuSource(err.reason)
    return source
