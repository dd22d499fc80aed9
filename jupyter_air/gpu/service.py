"""The GPU model behind the REST API: the shared sampler, its payload and kernel attribution (no HTTP here)."""

from __future__ import annotations

import socket

from .attribution import attribute
from .sampler import Sampler


class BadRequest(ValueError):
    """A request parameter is malformed; the message says which and how to fix it."""


def parse_since(value: str | None) -> int | None:
    """``since`` as epoch milliseconds, or ``None`` when absent."""
    if value is None or value == "":
        return None
    try:
        since = int(value)
    except ValueError:
        raise BadRequest(
            f"Query parameter 'since' must be an integer epoch time in milliseconds (e.g. since=1764420000000), "
            f"got {value!r}."
        ) from None
    if since < 0:
        raise BadRequest(f"Query parameter 'since' must not be negative, got {since}.")
    return since


class GpuService:
    """Answers GPU queries from the sampler's history; never calls NVML on the caller's thread."""

    def __init__(self, sampler: Sampler, kernel_manager=None, session_manager=None):
        self.sampler = sampler
        self.kernel_manager = kernel_manager
        self.session_manager = session_manager
        self.node = socket.gethostname()

    async def snapshot(self, since: int | None = None) -> dict:
        """The payload of ``GET /jupyter-air/gpu``; resumes a stopped sampler with a fresh sample first."""
        self.sampler.touch()
        await self.sampler.ensure_fresh()
        return await self._payload(since)

    async def refresh(self, since: int | None = None) -> dict:
        """Take a sample now (resuming sampling), then answer like ``snapshot``."""
        self.sampler.touch()
        await self.sampler.refresh()
        return await self._payload(since)

    async def _payload(self, since: int | None) -> dict:
        sampler = self.sampler
        source = sampler.source
        devices = [d.to_json() for d in source.devices] if source is not None else []
        series = sampler.history.since(since, len(devices))
        reading, host = sampler.history.latest()
        processes = await self._processes(reading.processes) if reading is not None else []
        series["host"]["memory_total_bytes"] = host.memory_total_bytes if host is not None else None
        return {
            "node": self.node,
            "source": source.name if source is not None else None,
            "available": bool(source is not None and source.available),
            "reason": source.reason if source is not None else None,
            "sampling": sampler.sampling,
            "interval_seconds": sampler.interval_seconds,
            "history_seconds": sampler.history_seconds,
            "idle_timeout_seconds": sampler.idle_timeout_seconds,
            "devices": devices,
            **series,
            "processes": processes,
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
