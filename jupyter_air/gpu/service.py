"""The GPU model behind the REST API: one snapshot of the shared sampler per answer, shaped as JSON (no HTTP here)."""

from __future__ import annotations

import socket

from .attribution import attribute
from .sampler import Sampler, Snapshot
from .types import SERIES_METRICS


class GpuService:
    """Answers GPU queries from the sampler's snapshots; never calls NVML on the caller's thread."""

    def __init__(self, sampler: Sampler, kernel_manager=None, session_manager=None):
        self.sampler = sampler
        self.kernel_manager = kernel_manager
        self.session_manager = session_manager
        self.node = socket.gethostname()

    async def snapshot(self, since: int | None = None) -> dict:
        """The payload of ``GET /jupyter-air/gpu``; resumes a stopped sampler with a fresh sample first."""
        self.sampler.touch()
        await self.sampler.ensure_fresh()
        return await self._payload(self.sampler.snapshot(since))

    async def refresh(self, since: int | None = None) -> dict:
        """Take a sample now (resuming sampling), then answer like ``snapshot``."""
        self.sampler.touch()
        await self.sampler.refresh()
        return await self._payload(self.sampler.snapshot(since))

    async def _payload(self, snap: Snapshot) -> dict:
        latest = snap.latest
        count = len(snap.devices)
        errors = latest.reading.errors if latest is not None else []
        return {
            "node": self.node,
            "source": snap.source,
            "available": snap.available,
            "reason": snap.reason,
            "sampling": snap.sampling,
            "interval_seconds": self.sampler.interval_seconds,
            "history_seconds": self.sampler.history_seconds,
            "idle_timeout_seconds": self.sampler.idle_timeout_seconds,
            "devices": [
                {
                    "index": d.index,
                    "uuid": d.uuid,
                    "name": d.name,
                    "memory_total_bytes": d.memory_total_bytes,
                    "error": (errors[i] if i < len(errors) else None) or d.error,
                }
                for i, d in enumerate(snap.devices)
            ],
            "timestamps_ms": [s.timestamp_ms for s in snap.samples],
            "gpus": {metric: _columns(snap, metric, count) for metric in SERIES_METRICS},
            "host": {
                "cpu_percent": [s.host.cpu_percent for s in snap.samples],
                "memory_used_bytes": [s.host.memory_used_bytes for s in snap.samples],
                "memory_total_bytes": latest.host.memory_total_bytes if latest is not None else None,
            },
            "processes": await self._processes(latest.reading.processes) if latest is not None else [],
        }

    async def _processes(self, processes) -> list[dict]:
        if not processes:
            return []
        kernel_pids, kernel_paths = {}, {}
        if self.kernel_manager is not None:
            for kernel_id in self.kernel_manager.list_kernel_ids():
                pid = getattr(getattr(self.kernel_manager.get_kernel(kernel_id), "provisioner", None), "pid", None)
                if pid is not None:
                    kernel_pids[pid] = kernel_id
        if self.session_manager is not None and kernel_pids:
            for session in await self.session_manager.list_sessions():
                kernel_paths[session["kernel"]["id"]] = session.get("path")
        return attribute(processes, kernel_pids, kernel_paths)


def _columns(snap: Snapshot, metric: str, count: int) -> list[list]:
    """``[gpu][sample]`` values of one metric; ``None`` where a sample has no value for that GPU."""
    rows = [getattr(sample.reading, metric) for sample in snap.samples]
    if not rows:
        return [[] for _ in range(count)]
    if all(len(row) == count for row in rows):
        return [list(column) for column in zip(*rows, strict=True)]
    return [[row[i] if i < len(row) else None for row in rows] for i in range(count)]
