"""Idle GPU holders: kernels that have executed nothing for a while yet hold GPU memory on a GPU doing no work.

A kernel is an idle holder of a GPU when it (or a child of it, or, on a Ray cluster, an actor of the Ray job it
drives, or a child of one) holds at least ``min_memory_mib`` MiB there, it is not busy, and neither it nor the GPU
did anything for ``minutes``: its last activity (Jupyter's ``last_activity``: every execution, output or
completion) and the last time the GPU was seen above 0 % utilization are both that old. A GPU whose utilization
cannot be read is never counted as idle. Each node is judged on its own GPUs. Knows nothing of HTTP, Ray nor of the
event loop: :meth:`IdleHolders.check` is given the samples and the kernels.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from .attribution import kernel_of
from .types import Reading

MIB = 1 << 20

#: ``(epoch ms, reading)`` of one node's samples, oldest first.
Samples = Sequence[tuple[int, Reading]]


@dataclass(frozen=True)
class KernelView:
    """What the check needs of one kernel of the server (read on the event loop)."""

    kernel_id: str
    pid: int | None
    path: str | None
    last_activity_s: float  # epoch seconds
    busy: bool


@dataclass(frozen=True)
class NodeHoldings:
    """One Ray node's part of a check: its samples since the last one, and which kernel each of its GPU processes
    works for (``{pid: kernel id}``, through the Ray job the kernel drives)."""

    node_id: str
    hostname: str
    samples: Samples
    owners: dict[int, str] = field(default_factory=dict)


class IdleHolders:
    """The idle holders found by the last check, and what the checks remember: when each GPU last worked."""

    def __init__(self, minutes: float, min_memory_mib: float, started_s: float):
        self.minutes = minutes
        self.min_memory_mib = min_memory_mib
        self.node = socket.gethostname()
        self._started_s = started_s
        # (Ray node id, or None for this server's node; GPU) -> last epoch seconds seen above 0 % (or unreadable)
        self._busy_s: dict[tuple[str | None, int], float] = {}
        self._first_s: dict[str, float] = {}  # Ray node id -> its first sample a check had (its GPUs unknown before)
        self._lock = threading.Lock()
        self._holders: tuple[dict, ...] = ()
        self.checked_ms: int | None = None
        # GPU processes the last check found under no kernel, for the same kernels: a process never moves under a
        # kernel that is already running, so they are not looked up again (each look walks the process's ancestors)
        self._foreign: tuple[frozenset[int], set[int]] = (frozenset(), set())

    @property
    def enabled(self) -> bool:
        return self.minutes > 0

    def check(
        self, samples: Samples, kernels: Iterable[KernelView], now_s: float, nodes: Sequence[NodeHoldings] = ()
    ) -> list[dict]:
        """Update the holders from this node's GPU ``samples`` taken since the last check (the newest says who holds
        what), the Ray ``nodes`` running the kernels' actors, and the server's ``kernels``, as of ``now_s``."""
        kernels = {k.kernel_id: k for k in kernels}
        holders = []
        if samples:
            held = self._memory_by_kernel(samples[-1][1], {k.pid: k.kernel_id for k in kernels.values() if k.pid})
            holders += self._judge(None, self.node, samples, held, kernels, now_s, self._started_s)
        for node in nodes:
            # watched since its sampler's first sample this server saw (or now, if none yet)
            first_s = self._first_s.setdefault(node.node_id, min([now_s] + [t / 1000 for t, _ in node.samples[:1]]))
            held = _memory_of(node.samples[-1][1], node.owners) if node.samples else {}
            holders += self._judge(node.node_id, node.hostname, node.samples, held, kernels, now_s, first_s)
        for gone in set(self._first_s) - {node.node_id for node in nodes}:  # counted afresh if it comes back
            del self._first_s[gone]
            self._busy_s = {key: at for key, at in self._busy_s.items() if key[0] != gone}
        with self._lock:
            self._holders = tuple(holders)
            self.checked_ms = int(now_s * 1000)
        return holders

    def _judge(self, node_id, hostname, samples: Samples, held: dict, kernels: dict, now_s: float, known_s: float):
        """Rows of one node's idle holders; ``known_s``: since when this node's GPUs are watched."""
        for timestamp_ms, reading in samples:
            for gpu, percent in enumerate(reading.utilization_percent):
                if percent is None or percent > 0:
                    key = (node_id, gpu)
                    self._busy_s[key] = max(self._busy_s.get(key, 0.0), timestamp_ms / 1000)
        rows = []
        for (kernel_id, gpu), (used, pids) in sorted(held.items()):
            kernel = kernels.get(kernel_id)
            if kernel is None or kernel.busy or used < self.min_memory_mib * MIB:
                continue
            since = max(kernel.last_activity_s, self._busy_s.get((node_id, gpu), known_s), known_s)
            since_ms = int(since * 1000)  # judged in the milliseconds it is reported in, as the check's own time
            if int(now_s * 1000) - since_ms >= self.minutes * 60_000:
                rows.append(
                    {
                        "kernel_id": kernel_id,
                        "path": kernel.path,
                        "node": hostname,
                        "node_id": node_id,
                        "gpu_index": gpu,
                        "used_memory_bytes": used,
                        "pids": pids,
                        "idle_since_ms": since_ms,
                    }
                )
        return rows

    def holders(self) -> list[dict]:
        with self._lock:
            return [dict(row) for row in self._holders]

    def mark(self, rows: list[dict], local: bool = True, node_id: str | None = None) -> list[dict]:
        """GPU process rows (:func:`~jupyter_air.gpu.attribution.attribute`) of this server's node (``local``)
        and/or of Ray node ``node_id``, with ``idle_since_ms`` (and the kernel and notebook) on those of an idle
        holder, ``None`` on the others."""
        with self._lock:
            holders = self._holders
        by_kernel = {(h["kernel_id"], h["gpu_index"]): h for h in holders if local and h["node_id"] is None}
        by_pid = {(pid, h["gpu_index"]): h for h in holders if node_id and h["node_id"] == node_id for pid in h["pids"]}
        marked = []
        for row in rows:
            holder = by_kernel.get((row.get("kernel_id"), row["gpu_index"])) or by_pid.get(
                (row["pid"], row["gpu_index"])
            )
            if holder is None:
                marked.append({**row, "idle_since_ms": None})
            else:
                keys = ("kernel_id", "path", "idle_since_ms")
                marked.append({**row, **{key: holder[key] for key in keys}})
        return marked

    def _memory_by_kernel(self, reading: Reading, kernel_pids: dict[int, str]) -> dict:
        """``{(kernel id, GPU): (bytes held, pids)}``: GPU memory of each kernel and its children on this node."""
        known, foreign = self._foreign
        skip = foreign if known == frozenset(kernel_pids) else set()
        owners, outside = {}, set()
        for proc in reading.processes:
            owner = None if proc.pid in skip else kernel_of(proc.pid, kernel_pids)
            if owner is None:
                outside.add(proc.pid)
            else:
                owners[proc.pid] = owner
        self._foreign = (frozenset(kernel_pids), outside)
        return _memory_of(reading, owners)


def _memory_of(reading: Reading, owners: dict[int, str]) -> dict[tuple[str, int], tuple[int, list[int]]]:
    """``{(kernel id, GPU): (bytes held, pids)}`` of the reading's processes that ``owners`` names a kernel for."""
    held: dict[tuple[str, int], tuple[int, list[int]]] = {}
    for proc in reading.processes:
        if proc.pid in owners:
            key = (owners[proc.pid], proc.gpu_index)
            used, pids = held.get(key, (0, []))
            held[key] = (used + (proc.used_memory_bytes or 0), [*pids, proc.pid])
    return held
