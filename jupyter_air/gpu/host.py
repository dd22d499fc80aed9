"""Host CPU and memory figures (psutil)."""

from __future__ import annotations

from dataclasses import dataclass

import psutil


@dataclass
class HostReading:
    cpu_percent: float
    memory_used_bytes: int
    memory_total_bytes: int


def read_host() -> HostReading:
    """CPU use since the previous call, and memory in use now."""
    memory = psutil.virtual_memory()
    return HostReading(psutil.cpu_percent(interval=None), int(memory.total - memory.available), int(memory.total))
