"""A clearly labelled ``simulated`` GPU source for demos and UI tests: plausible, varying, never real."""

from __future__ import annotations

import math
import random
import time

from .types import DeviceInfo, Reading

_GIB = 1024**3
_MEMORY_TOTAL_BYTES = 80 * _GIB


class SimulatedSource:
    """Reports ``count`` made-up GPUs whose load drifts slowly with some noise."""

    name = "simulated"

    def __init__(self, count: int = 2, seed: int | None = None):
        self.count = count
        self.available = False
        self.reason: str | None = None
        self.devices: list[DeviceInfo] = []
        self._random = random.Random(seed)

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
        now = time.time()
        for i in range(self.count):
            load = 0.5 + 0.4 * math.sin(now / 90.0 + i * 1.7) + self._random.uniform(-0.08, 0.08)
            load = min(1.0, max(0.0, load))
            reading.utilization_percent[i] = round(load * 100.0, 1)
            reading.memory_used_bytes[i] = int(_MEMORY_TOTAL_BYTES * (0.2 + 0.6 * load))
            reading.memory_total_bytes[i] = _MEMORY_TOTAL_BYTES
            reading.temperature_celsius[i] = round(34.0 + 45.0 * load, 1)
            reading.power_watts[i] = round(70.0 + 580.0 * load, 1)
        return reading

    def energy_millijoules(self) -> list[int | None]:
        """No made-up counter: a run's energy is then the integral of the simulated power, labelled simulated."""
        return [None] * self.count

    def close(self) -> None:
        self.available = False
