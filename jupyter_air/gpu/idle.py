"""Idle GPU holders: kernels that have executed nothing for a while yet hold GPU memory on a GPU doing no work.

A kernel is an idle holder of a GPU when it (or a child of it) holds at least ``min_memory_mib`` MiB there,
it is not busy, and neither it nor the GPU did anything for ``minutes``: its last activity (Jupyter's
``last_activity``: every execution, output or completion) and the last time the GPU was seen above 0 %
utilization are both that old. A GPU whose utilization cannot be read is never counted as idle. Knows nothing
of HTTP nor of the event loop: :meth:`IdleHolders.check` is given the samples and the kernels.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from .attribution import kernel_of
from .types import Reading

MIB = 1 << 20


@dataclass(frozen=True)
class KernelView:
    """What the check needs of one kernel of the server (read on the event loop)."""

    kernel_id: str
    pid: int | None
    path: str | None
    last_activity_s: float  # epoch seconds
    busy: bool


class IdleHolders:
    """The idle holders found by the last check, and what the checks remember: when each GPU last worked."""

    def __init__(self, minutes: float, min_memory_mib: float, started_s: float):
        self.minutes = minutes
        self.min_memory_mib = min_memory_mib
        self.node = socket.gethostname()
        self._started_s = started_s
        self._busy_s: dict[int, float] = {}  # GPU -> last epoch seconds seen above 0 % (or unreadable)
        self._lock = threading.Lock()
        self._holders: tuple[dict, ...] = ()
        self.checked_ms: int | None = None
        # GPU processes the last check found under no kernel, for the same kernels: a process never moves under a
        # kernel that is already running, so they are not looked up again (each look walks the process's ancestors)
        self._foreign: tuple[frozenset[int], set[int]] = (frozenset(), set())

    @property
    def enabled(self) -> bool:
        return self.minutes > 0

    def check(self, samples: Sequence[tuple[int, Reading]], kernels: Iterable[KernelView], now_s: float) -> list[dict]:
        """Update the holders from the GPU ``samples`` taken since the last check (``(epoch ms, reading)``, oldest
        first; the newest says who holds what) and the server's ``kernels``, as of ``now_s``."""
        for timestamp_ms, reading in samples:
            for gpu, percent in enumerate(reading.utilization_percent):
                if percent is None or percent > 0:
                    self._busy_s[gpu] = max(self._busy_s.get(gpu, 0.0), timestamp_ms / 1000)
        holders = []
        if samples:
            kernels = {k.pid: k for k in kernels if k.pid is not None}
            held = self._memory_by_kernel(samples[-1][1], kernels)
            for (pid, gpu), (used, pids) in sorted(held.items()):
                kernel = kernels[pid]
                if kernel.busy or used < self.min_memory_mib * MIB:
                    continue
                since = max(kernel.last_activity_s, self._busy_s.get(gpu, self._started_s), self._started_s)
                if now_s - since >= self.minutes * 60:
                    holders.append(self._row(kernel, gpu, used, pids, since))
        with self._lock:
            self._holders = tuple(holders)
            self.checked_ms = int(now_s * 1000)
        return holders

    def _row(self, kernel: KernelView, gpu: int, used: int, pids: list[int], since_s: float) -> dict:
        return {
            "kernel_id": kernel.kernel_id,
            "path": kernel.path,
            "node": self.node,
            "gpu_index": gpu,
            "used_memory_bytes": used,
            "pids": pids,
            "idle_since_ms": int(since_s * 1000),
        }

    def holders(self) -> list[dict]:
        with self._lock:
            return [dict(row) for row in self._holders]

    def mark(self, rows: list[dict]) -> list[dict]:
        """GPU process rows (:func:`~jupyter_air.gpu.attribution.attribute`) with ``idle_since_ms`` on those of an
        idle holder's kernel and GPU, ``None`` on the others."""
        with self._lock:
            idle = {(h["kernel_id"], h["gpu_index"]): h["idle_since_ms"] for h in self._holders}
        return [{**row, "idle_since_ms": idle.get((row.get("kernel_id"), row["gpu_index"]))} for row in rows]

    def _memory_by_kernel(self, reading: Reading, kernels: dict) -> dict[tuple[int, int], tuple[int, list[int]]]:
        """``{(kernel pid, GPU): (bytes held, pids)}``: GPU memory of each kernel and its children, per GPU."""
        kernel_pids = {pid: str(pid) for pid in kernels}
        known, foreign = self._foreign
        skip = foreign if known == frozenset(kernel_pids) else set()
        held: dict[tuple[int, int], tuple[int, list[int]]] = {}
        outside = set()
        for proc in reading.processes:
            owner = None if proc.pid in skip else kernel_of(proc.pid, kernel_pids)
            if owner is None:
                outside.add(proc.pid)
                continue
            key = (int(owner), proc.gpu_index)
            used, pids = held.get(key, (0, []))
            held[key] = (used + (proc.used_memory_bytes or 0), [*pids, proc.pid])
        self._foreign = (frozenset(kernel_pids), outside)
        return held
