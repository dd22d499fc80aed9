"""A clearly labelled ``simulated`` GPU source for demos and UI tests: plausible, varying, never real.

Its processes are this user's own that ran ``.distributed()`` calls, found in the process table
(:mod:`~jupyter_air.gpu.callers`) as NVML finds a GPU's processes in the driver: so the GPU panel can show the notebook
behind each, and a notebook left idle after a call becomes an idle GPU holder, as on real GPUs. A caller (a kernel, a
script) holds ``HELD_BYTES`` on the GPU its PID picks (PID mod the number of GPUs) for as long as it lives, as a
notebook whose model and CUDA cache stay on its GPU would; each rank of a running call holds ``RANK_BYTES`` on GPU
``rank mod count``. A GPU a rank works on is busy (at least ``WORKING_PERCENT``), a GPU only callers hold is at 0 %,
and the others drift slowly with some noise (made-up work that shows no process). The processes are looked through at
most every ``RESCAN_SECONDS``.
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Callable

from . import callers
from .types import DeviceInfo, GpuProcess, Reading

_GIB = 1024**3
_MEMORY_TOTAL_BYTES = 80 * _GIB
#: What a caller keeps on its GPU after a call: more than the idle-holder check's default 1024 MiB.
HELD_BYTES = 3 * _GIB
#: What each rank of a running call holds on its GPU.
RANK_BYTES = 12 * _GIB
#: The least utilization of a GPU a rank works on.
WORKING_PERCENT = 40.0
#: Seconds one look through the processes serves (each costs a few milliseconds; tests sample every 0.1 s).
RESCAN_SECONDS = 1.0


class SimulatedSource:
    """Reports ``count`` made-up GPUs used by ``users()`` (default: this user's ``.distributed()`` callers)."""

    name = "simulated"

    def __init__(
        self,
        count: int = 2,
        seed: int | None = None,
        users: Callable[[], list[callers.Caller]] = callers.find,
        rescan_seconds: float = RESCAN_SECONDS,
    ):
        self.count = count
        self.available = False
        self.reason: str | None = None
        self.devices: list[DeviceInfo] = []
        self._random = random.Random(seed)
        self._users = users
        self._rescan_seconds = rescan_seconds
        self._seen: tuple[float, list[callers.Caller]] = (float("-inf"), [])

    def open(self) -> None:
        self.devices = [
            DeviceInfo(
                index=i,
                uuid=f"SIMULATED-GPU-{i}",
                name="Simulated GPU (not real hardware)",
                memory_total_bytes=_MEMORY_TOTAL_BYTES,
            )
            for i in range(self.count)
        ]
        self.available = True

    def read(self) -> Reading:
        reading = Reading.empty(self.count)
        reading.processes, working = self._processes()
        now = time.time()
        for i in range(self.count):
            load = 0.5 + 0.4 * math.sin(now / 90.0 + i * 1.7) + self._random.uniform(-0.08, 0.08)
            load = min(1.0, max(0.0, load))
            held = sum(p.used_memory_bytes for p in reading.processes if p.gpu_index == i)
            if i in working:
                load = max(load, WORKING_PERCENT / 100.0)
            elif held:
                load = 0.0
            reading.utilization_percent[i] = round(load * 100.0, 1)
            background = int(_MEMORY_TOTAL_BYTES * (0.2 + 0.6 * load))
            reading.memory_used_bytes[i] = min(_MEMORY_TOTAL_BYTES, held) if held else background
            reading.memory_total_bytes[i] = _MEMORY_TOTAL_BYTES
            reading.temperature_celsius[i] = round(34.0 + 45.0 * load, 1)
            reading.power_watts[i] = round(70.0 + 580.0 * load, 1)
        return reading

    def _processes(self) -> tuple[list[GpuProcess], set[int]]:
        """The callers' and their ranks' processes, and the GPUs ranks work on."""
        processes, working = [], set()
        if time.monotonic() - self._seen[0] >= self._rescan_seconds:
            self._seen = (time.monotonic(), self._users())
        for caller in self._seen[1]:
            processes.append(GpuProcess(caller.pid % self.count, caller.pid, caller.name, HELD_BYTES))
            for rank, (pid, name) in enumerate(caller.ranks):
                processes.append(GpuProcess(rank % self.count, pid, name, RANK_BYTES))
                working.add(rank % self.count)
        return processes, working

    def energy_millijoules(self) -> list[int | None]:
        """No made-up counter: a run's energy is then the integral of the simulated power, labelled simulated."""
        return [None] * self.count

    def close(self) -> None:
        self.available = False
