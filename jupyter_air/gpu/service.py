"""The GPU model behind the REST API: one snapshot per answer, shaped as JSON (no HTTP here).

Without a Ray cluster the snapshot is this server's sampler's. With one (``c.JupyterAir.ray_address``)
it is one node's, every node sampling itself (:mod:`~jupyter_air.gpu.cluster`), and the answer also
lists every node under ``nodes``.
"""

from __future__ import annotations

import asyncio
import os
import socket

from jupyter_air.cluster.held import holders as held_nodes

from .attribution import attribute
from .cluster import ClusterGpu, ClusterUnavailable, NoSuchNode
from .history import Sample
from .idle import IdleHolders
from .sampler import Sampler, Snapshot
from .types import SERIES_METRICS


class GpuService:
    """Answers GPU queries from the sampler's snapshots; never calls NVML on the caller's thread."""

    def __init__(
        self,
        sampler: Sampler,
        kernel_manager=None,
        session_manager=None,
        cluster: ClusterGpu | None = None,
        idle_holders: IdleHolders | None = None,
    ):
        self.sampler = sampler
        self.kernel_manager = kernel_manager
        self.session_manager = session_manager
        self.cluster = cluster
        self.idle_holders = idle_holders
        self.node = socket.gethostname()
        self._rows: tuple[tuple, asyncio.Future] | None = None  # the latest process rows, by what they name

    async def snapshot(self, since: int | None = None, node: str | None = None) -> dict:
        """The payload of ``GET /jupyter-air/gpu``; resumes a stopped sampler with a fresh sample first."""
        if self.cluster is not None:
            return await self._from_cluster(node, since, refresh=False)
        self._no_cluster(node)
        self.sampler.touch()
        await self.sampler.ensure_fresh()
        return await self._payload(self.sampler.snapshot(since))

    async def refresh(self, since: int | None = None, node: str | None = None) -> dict:
        """Take a sample now (resuming sampling), then answer like ``snapshot``."""
        if self.cluster is not None:
            return await self._from_cluster(node, since, refresh=True)
        self._no_cluster(node)
        self.sampler.touch()
        await self.sampler.refresh()
        return await self._payload(self.sampler.snapshot(since))

    def _no_cluster(self, node: str | None) -> None:
        if node is not None:
            raise NoSuchNode(
                f"No node {node[:100]!r}: this server watches only its own GPUs (no Ray cluster is configured; "
                "set c.JupyterAir.ray_address to watch every node of one)."
            )

    async def _from_cluster(self, node: str | None, since: int | None, refresh: bool) -> dict:
        cluster = {"address": self.cluster.address, "error": None}
        try:
            summary, snap, nodes = await self.cluster.answer(node, since, refresh)
        except ClusterUnavailable as exc:  # this server's own GPUs, with the reason the others are missing
            self.sampler.touch()
            await self.sampler.ensure_fresh()
            payload = await self._payload(self.sampler.snapshot(since))
            return {**payload, "nodes": [], "cluster": {**cluster, "error": str(exc)}}
        payload = await self._payload(snap, summary.get("is_server_node", False), summary.get("id"))
        return {
            **payload,
            "node": summary.get("hostname") or payload["node"],
            "node_id": summary.get("id"),
            "node_state": summary.get("state", "unreachable"),
            "nodes": nodes,
            "cluster": cluster,
        }

    async def _payload(self, snap: Snapshot, local: bool = True, node_id: str | None = None) -> dict:
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
            "processes": await self._processes(latest, local, node_id) if latest is not None else [],
        }

    async def _processes(self, latest: Sample, local: bool, node_id: str | None) -> list[dict]:
        """Rows of the sample's GPU processes; on this server's node, each names its kernel and notebook when it
        has one. Those of an idle holder (here, or on Ray node ``node_id`` through its Ray job) are marked.

        Naming reads /proc for every ancestor of every process: it is done once per sample and set of kernels,
        off the event loop, and shared by every request until the next sample.
        """
        processes = latest.reading.processes
        if not processes:
            return []
        kernel_pids = self._kernel_pids() if local else {}
        if not kernel_pids:
            rows = attribute(processes, {}, {})
        else:
            key = (latest.timestamp_ms, tuple(processes), tuple(sorted(kernel_pids.items())))
            kept = self._rows
            if kept is None or kept[0] != key or (kept[1].done() and (kept[1].cancelled() or kept[1].exception())):
                self._rows = kept = (key, asyncio.ensure_future(self._attribute(processes, kernel_pids)))
            rows = await asyncio.shield(kept[1])
        return self.idle_holders.mark(rows, local, node_id) if self.idle_holders is not None else rows

    async def _attribute(self, processes, kernel_pids: dict[int, str]) -> list[dict]:
        kernel_paths = await self._kernel_paths()
        return await asyncio.get_running_loop().run_in_executor(None, attribute, processes, kernel_pids, kernel_paths)

    async def _kernels(self) -> tuple[dict[int, str], dict[str, str]]:
        """``({pid: kernel id}, {kernel id: notebook path})`` of this server's kernels."""
        kernel_pids = self._kernel_pids()
        return kernel_pids, (await self._kernel_paths() if kernel_pids else {})

    def _kernel_pids(self) -> dict[int, str]:
        kernel_pids = {}
        if self.kernel_manager is not None:
            for kernel_id in self.kernel_manager.list_kernel_ids():
                pid = getattr(getattr(self.kernel_manager.get_kernel(kernel_id), "provisioner", None), "pid", None)
                if pid is not None:
                    kernel_pids[pid] = kernel_id
        return kernel_pids

    async def _kernel_paths(self) -> dict[str, str]:
        if self.session_manager is None:
            return {}
        return {session["kernel"]["id"]: session.get("path") for session in await self.session_manager.list_sessions()}

    def _contents_path(self, notebook: str | None) -> str | None:
        """A notebook's path on disk (what Jupyter gave a kernel as ``JPY_SESSION_NAME``, and what a process it
        started inherited) as this server's contents path, when it lies under the server's root."""
        root = getattr(self.kernel_manager, "root_dir", None)
        if not notebook or not root or not os.path.isabs(notebook):
            return notebook
        relative = os.path.relpath(notebook, root)
        return notebook if relative.startswith("..") else relative.replace(os.sep, "/")

    async def idle(self) -> dict:
        """The payload of ``GET /jupyter-air/gpu/idle-holders``: the last check's idle GPU holders of this node, and
        the Ray nodes that notebooks keep for their next call (read now)."""
        held = await asyncio.get_running_loop().run_in_executor(None, held_nodes)
        kernel_pids, kernel_paths = await self._kernels() if held else ({}, {})
        node_holders = []
        for record in held:
            kernel_id = kernel_pids.get(record["pid"])
            path = kernel_paths.get(kernel_id) if kernel_id else None
            keys = ("pid", "address", "share", "nodes", "since_ms", "until_ms")
            node_holders.append(
                {
                    **{k: record.get(k) for k in keys},
                    "kernel_id": kernel_id,
                    "path": path or self._contents_path(record.get("notebook")),
                    "parked": bool(record.get("names")),  # the keeper of actors parked by remote calls
                }
            )
        holders = self.idle_holders
        answer = {"node": self.node, "node_holders": node_holders}
        if holders is None or not holders.enabled:
            return {**answer, "enabled": False, "checked_ms": None, "holders": []}
        return {
            **answer,
            "enabled": True,
            "idle_minutes": holders.minutes,
            "min_memory_mib": holders.min_memory_mib,
            "checked_ms": holders.checked_ms,
            "holders": holders.holders(),
        }


def _columns(snap: Snapshot, metric: str, count: int) -> list[list]:
    """``[gpu][sample]`` values of one metric; ``None`` where a sample has no value for that GPU."""
    rows = [getattr(sample.reading, metric) for sample in snap.samples]
    if not rows:
        return [[] for _ in range(count)]
    if all(len(row) == count for row in rows):
        return [list(column) for column in zip(*rows, strict=True)]
    return [[row[i] if i < len(row) else None for row in rows] for i in range(count)]
