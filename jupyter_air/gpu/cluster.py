"""The GPU panel across a Ray cluster: the existing sampler on every node, in an actor; the server fans in.

Each alive node gets one :class:`NodeSampler` (no CPU reserved, pinned to its node) running jupyter_air's
:class:`~jupyter_air.gpu.sampler.Sampler` with the server's source, interval, history and idle rules: an idle
panel stops every node's sampling. One request to the server asks every node at once and waits at most
``ANSWER_SECONDS``; a node that does not answer in time (or that Ray reports dead) is *unreachable*, shown
with when it was last seen and no values, never as zero, and is not waited for again until it answers. A
node whose sampler has not answered yet since it was started is *starting*.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import time
from dataclasses import dataclass, field

from jupyter_air.cluster.auth import HOW_TO_LOCK
from jupyter_air.cluster.connect import connect, is_open, ray_module
from jupyter_air.cluster.drivers import actors_by_node
from jupyter_air.cluster.errors import ClusterError

from .idle import NodeHoldings
from .node_sampler import NodeSampler
from .sampler import Snapshot

#: Seconds a node's sampler has to answer one request before the node shows as unreachable.
ANSWER_SECONDS = 1.0
#: Seconds between two reads of the cluster's node table (new nodes get a sampler, dead ones are marked).
_NODES_SECONDS = 5.0
#: A ``since`` later than any sample: the answer holds only the newest sample (what the overview shows).
_LATEST_ONLY_MS = 2**62

log = logging.getLogger(__name__)


class NoSuchNode(LookupError):
    """A ``node`` the server cannot answer for (the cluster does not list it, or there is no cluster); the message
    says where to find the nodes there are."""


class ClusterUnavailable(RuntimeError):
    """The cluster cannot be joined; the panel shows this node's GPUs with the reason."""


@dataclass
class _Node:
    id: str
    hostname: str
    ip: str
    alive: bool = True
    sampler: object | None = None
    pending: concurrent.futures.Future | None = None
    last: Snapshot | None = None
    last_seen_ms: int | None = None
    reason: str | None = None
    gone_since: float | None = field(default=None, repr=False)

    @property
    def starting(self) -> bool:
        """Its sampler was started and has not answered yet (an actor takes seconds to start)."""
        return self.alive and self.last_seen_ms is None and self.pending is not None and not self.pending.done()

    @property
    def reachable(self) -> bool:
        return self.alive and self.reason is None

    def summary(self, server_node: str | None) -> dict:
        """The node as the overview shows it: identity, state, and its GPUs' newest values while reachable."""
        snap = self.last
        latest = snap.latest if snap is not None else None
        gpus = []
        if self.reachable and latest is not None:
            reading = latest.reading
            for i, device in enumerate(snap.devices):
                gpus.append(
                    {
                        "index": device.index,
                        "name": device.name,
                        "utilization_percent": _at(reading.utilization_percent, i),
                        "memory_used_bytes": _at(reading.memory_used_bytes, i),
                        "memory_total_bytes": device.memory_total_bytes or _at(reading.memory_total_bytes, i),
                        "temperature_celsius": _at(reading.temperature_celsius, i),
                    }
                )
        return {
            "id": self.id,
            "hostname": self.hostname,
            "ip": self.ip,
            "state": "live" if self.reachable else "starting" if self.starting else "unreachable",
            "reason": self.reason if self.alive else "Ray reports the node dead",
            "last_seen_ms": self.last_seen_ms,
            "gpu_count": len(snap.devices) if snap is not None else None,
            "source": snap.source if snap is not None else None,
            "available": bool(snap.available) if snap is not None else False,
            "is_server_node": self.id == server_node,
            "gpus": gpus,
        }


def _at(values, index: int):
    return values[index] if values and index < len(values) else None


class ClusterGpu:
    """Every node's samples for the GPU routes; Ray calls run off the event loop or are awaited with a deadline."""

    def __init__(self, address: str, kind: str, count: int, interval: float, history: float, idle: float):
        self.address = address
        self._settings = (kind, count, interval, history, idle)
        self.history_seconds = history
        self._nodes: dict[str, _Node] = {}
        self._server_node: str | None = None
        self._read_at = float("-inf")
        self._error: str | None = None
        self._open_checked = False
        self._executor = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="jupyter-air-ray")

    async def answer(self, node_id: str | None, since_ms: int | None, refresh: bool) -> tuple[dict, Snapshot, list]:
        """``(node summary, its samples after since_ms, every node's summary)`` for ``node_id`` (default: the
        server's own node, else the first reachable one). Raises ClusterUnavailable or NoSuchNode."""
        await asyncio.get_running_loop().run_in_executor(self._executor, self._read_nodes)
        if node_id is not None and node_id not in self._nodes:
            raise NoSuchNode(
                f"No node {node_id[:100]!r} in the Ray cluster at {self.address}; GET jupyter-air/gpu lists them "
                "under `nodes`."
            )
        chosen = self._nodes.get(node_id) if node_id else self._default()
        detail = await self._fan_in(chosen, since_ms, refresh)
        summaries = [n.summary(self._server_node) for n in self._nodes.values()]
        if chosen is None:
            return {}, _unreachable("The Ray cluster has no node."), summaries
        if detail is None:
            seen = (
                time.strftime("%H:%M:%S", time.localtime(chosen.last_seen_ms / 1000)) if chosen.last_seen_ms else None
            )
            why = chosen.reason if chosen.alive else "Ray reports the node dead"
            detail = _unreachable(
                f"Node {chosen.hostname} ({chosen.ip}) is unreachable: {why}"
                + (f"; last seen {seen}." if seen else ".")
            )
        return chosen.summary(self._server_node), detail, summaries

    async def holdings(self, kernel_pids: dict[int, str], since_ms: dict[str, int]) -> list[NodeHoldings]:
        """Every node running actors of a Ray job that one of this server's kernels (``{pid: kernel id}``) drives:
        its samples after ``since_ms[node id]`` and its GPU processes that work for a kernel. A node that does not
        answer within ``ANSWER_SECONDS`` is left out of this check. Raises ClusterUnavailable."""
        return await asyncio.get_running_loop().run_in_executor(self._executor, self._holdings, kernel_pids, since_ms)

    def _holdings(self, kernel_pids: dict[int, str], since_ms: dict[str, int]) -> list[NodeHoldings]:
        self._read_nodes()

        ray = ray_module()
        if not kernel_pids or ray.util.client.ray.is_connected():  # Ray Client cannot read the GCS tables
            return []
        server = self._nodes.get(self._server_node or "")
        asked = {}
        for node_id, actors in actors_by_node(kernel_pids, server.ip if server else None).items():
            node = self._nodes.get(node_id)
            if node is not None and node.reachable and node.sampler is not None:
                asked[node.sampler.holdings.remote(actors, since_ms.get(node_id))] = node
        ready, _ = ray.wait(list(asked), num_returns=len(asked), timeout=ANSWER_SECONDS) if asked else ([], [])
        answers = []
        for ref in ready:
            try:
                samples, owners = ray.get(ref)
            except Exception as exc:  # noqa: BLE001 - a node whose sampler failed sits this check out
                log.debug("idle-holder check: node %s did not answer: %s", asked[ref].id, exc)
                continue
            answers.append(NodeHoldings(asked[ref].id, asked[ref].hostname, samples, owners))
        return answers

    def close(self) -> None:
        """Kill every node's sampler (their guards exit with them)."""
        try:
            import ray

            if ray.is_initialized():
                for node in self._nodes.values():
                    if node.sampler is not None:
                        ray.kill(node.sampler)
        finally:
            self._executor.shutdown(wait=False, cancel_futures=True)

    def _default(self) -> _Node | None:
        server = self._nodes.get(self._server_node or "")
        if server is not None and server.reachable:
            return server
        return next((n for n in self._nodes.values() if n.reachable), next(iter(self._nodes.values()), None))

    def _read_nodes(self) -> None:
        """Join the cluster once, then now and then read its node table: samplers for new nodes, dead ones marked
        (and dropped once unseen for the history's length)."""
        if time.monotonic() - self._read_at < _NODES_SECONDS:
            if self._error:
                raise ClusterUnavailable(self._error)
            return
        self._read_at = time.monotonic()

        try:
            connect(self.address)
        except ClusterError as exc:
            self._error = str(exc)
            raise ClusterUnavailable(self._error) from None
        self._error = None
        if not self._open_checked:
            self._open_checked = True
            self._warn_if_open()
        ray = ray_module()
        self._server_node = ray.get_runtime_context().get_node_id() if not ray.util.client.ray.is_connected() else None
        for entry in ray.nodes():
            if not entry.get("Alive") and entry["NodeID"] not in self._nodes:
                continue  # dead before this server saw it: nothing to show
            node = self._nodes.setdefault(
                entry["NodeID"],
                _Node(entry["NodeID"], entry.get("NodeManagerHostname", ""), entry["NodeManagerAddress"]),
            )
            node.alive = bool(entry.get("Alive"))
            if node.alive and node.sampler is None:
                node.sampler = self._start_sampler(ray, node.id, len(self._nodes) - 1)
            if not node.alive and node.gone_since is None:
                node.gone_since = time.monotonic()
        for node_id, node in list(self._nodes.items()):
            if node.gone_since is not None and time.monotonic() - node.gone_since > self.history_seconds:
                del self._nodes[node_id]

    def _warn_if_open(self) -> None:
        if is_open(self.address):
            log.warning(
                "The Ray cluster at %s accepts calls without a token: every local user of every node, and anyone "
                "who reaches the nodes' addresses, can run code on it as the cluster's user and read what its jobs "
                "hold (tokens in their environment included). To lock it, %s.",
                self.address,
                HOW_TO_LOCK,
            )

    def _start_sampler(self, ray, node_id: str, index: int):
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        remote = ray.remote(max_concurrency=2)(NodeSampler)
        return remote.options(
            num_cpus=0, scheduling_strategy=NodeAffinitySchedulingStrategy(node_id=node_id, soft=False)
        ).remote(index, *self._settings)

    async def _fan_in(self, chosen: _Node | None, since_ms: int | None, refresh: bool) -> Snapshot | None:
        """Ask every reachable node for its newest sample (``chosen`` for its samples after ``since_ms``) in one
        round; returns ``chosen``'s answer, or None when it is unreachable."""
        self._harvest()  # late answers to earlier rounds: those nodes are back
        asked = {}
        for node in self._nodes.values():
            if node.alive and node.sampler is not None and node.pending is None:
                detail = node is chosen
                ref = node.sampler.snapshot.remote(since_ms if detail else _LATEST_ONLY_MS, refresh and detail)
                node.pending = asked[node.id] = ref.future()
        if asked:
            await asyncio.wait([asyncio.wrap_future(f) for f in asked.values()], timeout=ANSWER_SECONDS)
        self._harvest()
        for node in self._nodes.values():
            if node.pending is not None:  # not answered in time: not waited for again until it answers
                node.reason = f"no answer within {ANSWER_SECONDS:g} s"
        if chosen is None or chosen.id not in asked or not asked[chosen.id].done() or not chosen.reachable:
            return None
        return chosen.last

    def _harvest(self) -> None:
        for node in self._nodes.values():
            if node.pending is None or not node.pending.done():
                continue
            future, node.pending = node.pending, None
            try:
                snap = future.result()
            except Exception as exc:  # noqa: BLE001 - any failure of the node's actor means unreachable
                node.reason = f"its sampler failed: {type(exc).__name__}"
                continue
            node.reason = None
            node.last_seen_ms = int(time.time() * 1000)
            node.last = snap


def _unreachable(reason: str) -> Snapshot:
    return Snapshot(None, False, reason, False, (), (), None)
