"""Chooses and opens the GPU source: ``auto`` (NVML if it loads, else none), ``nvml``, ``simulated`` or ``none``.

One resolution for the server, the magics, the ``air`` command and system metrics: the environment
variable ``JUPYTER_AIR_GPU_SOURCE`` first, then the server's ``c.JupyterAir.gpu_source``, then ``auto``.
The server exports its choice to that variable, so its kernels and terminals see the same GPUs.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Iterator

from .nvml import NvmlSource
from .simulated import SimulatedSource
from .types import DeviceInfo, GpuSource, GpuUnavailable, Reading

log = logging.getLogger(__name__)

SOURCE_KINDS = ("auto", "nvml", "simulated", "none")
#: Where GPU figures come from (``auto``, ``nvml``, ``simulated``, ``none``); overrides ``c.JupyterAir.gpu_source``.
#: The Jupyter server passes its choice to its kernels and terminals in it, so ``%air_gpu``, ``air`` and the runs'
#: system metrics see the GPUs the panel shows.
SOURCE_ENV = "JUPYTER_AIR_GPU_SOURCE"
#: Number of GPUs the ``simulated`` source reports (1-16, default 2); the server passes ``c.JupyterAir.simulated_gpus``
#: to its kernels and terminals in it.
SIMULATED_GPUS_ENV = "JUPYTER_AIR_SIMULATED_GPUS"
DEFAULT_SIMULATED_GPUS = 2


class NoGpuSource:
    """No GPU to report; ``reason`` says why."""

    name = "none"
    available = False

    def __init__(self, reason: str):
        self.reason = reason
        self.devices: list[DeviceInfo] = []

    def read(self) -> Reading:
        return Reading()

    def energy_millijoules(self) -> list[int | None]:
        return []

    def close(self) -> None:
        pass


def source_kind(configured: str | None = None) -> str:
    """``$JUPYTER_AIR_GPU_SOURCE``, else ``configured`` (the server's setting), else ``auto``.

    An unknown value is an error that names where it came from and the values allowed.
    """
    from_env = os.environ.get(SOURCE_ENV, "").strip()
    kind = from_env or configured or "auto"
    if kind not in SOURCE_KINDS:
        where = f"{SOURCE_ENV}={from_env!r}" if from_env else f"gpu_source {kind!r}"
        raise ValueError(f"Unknown GPU source {where}: choose one of {', '.join(SOURCE_KINDS)}.")
    return kind


def simulated_gpus(configured: int | None = None) -> int:
    """Number of simulated GPUs: ``$JUPYTER_AIR_SIMULATED_GPUS``, else ``configured``, else 2."""
    raw = os.environ.get(SIMULATED_GPUS_ENV, "").strip()
    return int(raw) if raw.isdigit() and 1 <= int(raw) <= 16 else configured or DEFAULT_SIMULATED_GPUS


def open_source(kind: str | None = None, count: int | None = None) -> GpuSource:
    """Open the GPU source named ``kind`` (default: :func:`source_kind`); one that cannot start becomes a
    ``NoGpuSource`` with its reason."""
    kind = source_kind() if kind is None else kind
    if kind not in SOURCE_KINDS:
        raise ValueError(f"Unknown GPU source {kind!r}: choose one of {', '.join(SOURCE_KINDS)}.")
    if kind == "none":
        return NoGpuSource("GPU monitoring is turned off on this server (gpu_source = 'none').")
    source = SimulatedSource(simulated_gpus(count)) if kind == "simulated" else NvmlSource()
    try:
        source.open()
    except GpuUnavailable as err:
        log.info("No GPU source: %s", err.reason)
        return NoGpuSource(err.reason)
    return source


@contextlib.contextmanager
def opened(kind: str | None = None) -> Iterator[GpuSource]:
    """The GPU source, open for the block and closed after it (check ``available`` before reading)."""
    source = open_source(kind)
    try:
        yield source
    finally:
        source.close()
