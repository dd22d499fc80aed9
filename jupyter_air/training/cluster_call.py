"""A call spread over several Ray nodes, driven from the notebook with the interface of :class:`launch.Call`.

One actor per node (:class:`~jupyter_air.training.agent.TrainingAgent`, in a STRICT_SPREAD placement group)
runs that node's share of the elastic launch; ranks rendezvous on node 0. The driver copies each rank's new
log bytes into local files (the cell prints them, the run keeps them), keeps one pending ``wait()`` per node
(its error is how Ray says a node died) and orders failures across nodes to find the root cause. Actors are
kept for the next call of the same shape (about 0.6 s instead of 5 s); any call stopped early kills them.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
import time
import uuid
from pathlib import Path

from jupyter_air.cluster import mirror
from jupyter_air.cluster.connect import connect, ray_module
from jupyter_air.cluster.hosts import check_tracking, driver_host
from jupyter_air.cluster.placement import ANSWER_SECONDS, NodeGroup, bundle, describe_bundle
from jupyter_air.training.agent import TrainingAgent
from jupyter_air.training.errors import DistributedError, NodeLost, describe_exit
from jupyter_air.training.launch import NodePlace
from jupyter_air.training.options import RunOptions

#: Seconds the other nodes get to end by themselves once a node's ranks failed, before they are stopped.
FAILURE_GRACE_SECONDS = 5.0
#: Seconds to wait for free nodes before the call fails (nothing has started then, no run exists).
PLACEMENT_WAIT_SECONDS = 60.0
#: Seconds the actors of a finished call are kept, holding their nodes' GPUs, for a next call of the same shape.
KEEP_SECONDS = 300.0
#: Seconds every node gets to stop its ranks (SIGTERM, then SIGKILL) before its actor is killed anyway.
_STOP_SECONDS = 15.0
#: What a rank reports when another rank died first: never the root cause while a real error exists.
_PEER_ERRORS = (
    "Connection closed by peer",
    "Connection reset by peer",
    "Broken pipe",
    "NCCL communicator was aborted",
    "Socket Timeout",
)
_SIGNALLED = {-15, -9}


class _Kept:
    """The actors of the last finished call, kept for ``KEEP_SECONDS`` for the next call of the same shape on the
    same connection."""

    key: tuple | None = None
    group: NodeGroup | None = None
    timer: threading.Timer | None = None
    lock = threading.Lock()

    @classmethod
    def take(cls, key: tuple) -> NodeGroup | None:
        """The kept group if it has this shape; any other kept group is closed."""
        with cls.lock:
            group, cls.group = cls.group, None
            if cls.timer is not None:
                cls.timer.cancel()
        if group is not None and (cls.key != key or group.closed):
            group.close()
            group = None
        return group

    @classmethod
    def keep(cls, key: tuple, group: NodeGroup) -> None:
        cls.take(key)
        with cls.lock:
            cls.key, cls.group = key, group
            cls.timer = threading.Timer(KEEP_SECONDS, cls._expire, args=(group,))
            cls.timer.daemon = True
            cls.timer.start()

    @classmethod
    def _expire(cls, group: NodeGroup) -> None:
        with cls.lock:
            if cls.group is not group:
                return
            cls.group = None
        group.close()


def release_nodes() -> None:
    """Free the nodes kept for the next multi-node call now (else after ``KEEP_SECONDS`` or when the kernel
    stops)."""
    _Kept.take(())


def _shape(ray, gpus: int | None, nodes: int) -> tuple[int, int]:
    """``(ranks per node, GPUs per node)``: like one node, ``gpus`` CPU ranks on a cluster without GPUs."""
    counts = sorted((int(n["Resources"].get("GPU", 0)) for n in ray.nodes() if n.get("Alive")), reverse=True)
    if not counts or counts[0] == 0:
        return (gpus or 1), 0
    per_node = gpus if gpus is not None else max(counts[min(nodes, len(counts)) - 1], 1)
    return per_node, per_node


class ClusterCall:
    """``function`` on ``options.nodes`` nodes of the Ray cluster at ``address``; see the module docstring."""

    def __init__(self, payload: bytes, context: dict, options: RunOptions, address: str):
        self.payload = payload
        self.context = context
        self.options = options
        self.address = address
        self.nodes = options.nodes
        self.folder = Path(tempfile.mkdtemp(prefix="air-call-"))
        self.group: NodeGroup | None = None
        self.tags: dict[str, str] = {}
        self._key: tuple = ()
        self._logs: list[dict[int, Path]] = []
        self._waits: dict = {}
        self._running: list[bool] = []
        self._failed_at: float | None = None
        self._reusable = False

    # The interface of launch.Call, in the order the notebook API uses it.

    def start(self, note=lambda what: None) -> None:
        """Join the cluster, place one actor per node (or reuse the last call's), start every node's ranks;
        ``note(what)`` hears what it waits for."""
        note(f"joining the Ray cluster at {self.address}")
        ray = ray_module()
        generation = connect(self.address)
        nproc, gpus = _shape(ray, self.options.gpus, self.nodes)
        share = bundle(gpus, nproc)
        self._key = (generation, self.nodes, tuple(sorted(share.items())))

        def check_hosts(hosts: list[str]) -> None:
            from jupyter_air.tracking.store import tracking_uri

            check_tracking(hosts, driver_host(), tracking_uri(), f"this call on {self.nodes} nodes")

        self.group = _Kept.take(self._key)
        if self.group is None:
            note(f"placing {self.nodes} nodes with {describe_bundle(share)} each")
            self.group = NodeGroup.place(
                TrainingAgent,
                self.nodes,
                share,
                wait_seconds=PLACEMENT_WAIT_SECONDS,
                waiting=note,
                check_hosts=check_hosts,
            )
        note(f"starting the ranks on {self.nodes} nodes")
        try:
            check_hosts(self.group.hosts)
            self._launch(ray, nproc)
        except BaseException:
            self.group.close()
            raise
        self.tags = {
            "air.nodes": str(self.nodes),
            "air.gpus": str(gpus * self.nodes),
            "air.world_size": str(nproc * self.nodes),
            "air.ray_address": self.address,
        }

    def _launch(self, ray, nproc: int) -> None:
        infos, agents = self.group.infos, self.group.agents
        port = ray.get(agents[0].reserve_port.remote(infos[0].ip), timeout=ANSWER_SECONDS)
        run_id = f"air-{uuid.uuid4().hex[:12]}"
        endpoint = f"{infos[0].ip}:{port}"
        places = [NodePlace(nproc, self.nodes, i, endpoint, info.ip, run_id) for i, info in enumerate(infos)]
        for place in places:
            folder = self.folder / f"node_{place.node_rank}"
            folder.mkdir()
            self._logs.append({rank: folder / f"rank_{rank}.log" for rank in place.ranks})
            for path in self._logs[-1].values():
                path.touch()
        payload = ray.put(self.payload)
        self._answers({agents[p.node_rank].start.remote(payload, self.context, p): p.node_rank for p in places})
        self._running = [True] * self.nodes
        self._waits = {agent.wait.remote(): i for i, agent in enumerate(agents)}

    def release(self, overrides: dict[str, str]) -> None:
        """Let every node's ranks run with their node's environment, this kernel's ``MLFLOW_*`` and ``overrides``."""
        from jupyter_air.tracking.lifecycle import system_metrics_interval

        env = {**{k: v for k, v in os.environ.items() if k.startswith("MLFLOW_")}, **overrides}
        interval = system_metrics_interval() if self.options.log_system_metrics else None
        self._answers({a.release.remote(env, interval): i for i, a in enumerate(self.group.agents)})

    @property
    def running(self) -> bool:
        return any(self._running)

    def join(self, timeout: float) -> None:
        """Wait up to ``timeout`` seconds for a node to end, then copy new log bytes; raises NodeLost."""
        ray = ray_module()
        if self._waits:
            ready, _ = ray.wait(list(self._waits), num_returns=1, timeout=timeout)
            for ref in ready:
                node = self._waits.pop(ref)
                try:
                    ray.get(ref)
                except ray.exceptions.RayActorError as exc:
                    self._confirm(node, exc)
                    self._waits[self.group.agents[node].wait.remote()] = node
        else:
            time.sleep(timeout)
        self._poll()
        if self._failed_at is not None and self.running and time.monotonic() - self._failed_at > FAILURE_GRACE_SECONDS:
            # A node failed and the others neither ended nor failed: they wait on a peer that is gone.
            self._answers({self.group.agents[i].stop.remote(): i for i, on in enumerate(self._running) if on})
            self._poll()

    def stop(self) -> None:
        """Stop every node that still runs (a timeout, an interrupt, a lost node); their actors are killed after."""
        if self.group is None or self.group.closed or not self.running:
            return
        self._running = [False] * self.nodes
        try:
            ray = ray_module()
            refs = [agent.stop.remote() for agent in self.group.agents]
            ray.wait(refs, num_returns=len(refs), timeout=_STOP_SECONDS)
            self._poll(quiet=True)
        finally:
            self.group.close()

    def results(self) -> list:
        """Each rank's return value by global rank; raises DistributedError with the root cause across nodes."""
        import cloudpickle

        outcomes = self._answers({a.outcome.remote(): i for i, a in enumerate(self.group.agents)})
        self._poll()
        failures = [(node, outcome) for node, outcome in enumerate(outcomes) if "failure" in outcome]
        for node, _ in failures:  # ranks that died with their node: the node's loss is the cause
            if not self.group.answers_again(node):
                raise self._lost(node, "its raylet or actor is gone")
        self._reusable = True
        if failures:
            raise self._root_cause(failures)
        values = {}
        for outcome in outcomes:
            values.update(outcome["results"])
        return [cloudpickle.loads(values[rank]) for rank in sorted(values)]

    def cleanup(self) -> None:
        """Keep the actors for the next call when this one ended by itself, else kill them; delete local logs."""
        group = self.group
        if group is not None and not group.closed:
            try:
                refs = {a.cleanup.remote(): i for i, a in enumerate(group.agents)} if self._reusable else None
                got = group.gather(refs) if refs else None
                if got is None or got.errors or got.late:
                    group.close()  # stopped early, or a node is gone: never keep it (nor hide the call's outcome)
                else:
                    _Kept.keep(self._key, group)
            except BaseException:
                group.close()
                raise
        shutil.rmtree(self.folder, ignore_errors=True)

    def log_files(self) -> dict[str, dict[int, Path]]:
        """``{artifact folder: {global rank: local copy of the log}}``: ``logs/node_<n>/rank_<r>.log``."""
        return {f"logs/node_{node}": dict(logs) for node, logs in enumerate(self._logs)}

    # Talking to the nodes.

    def _poll(self, quiet: bool = False) -> None:
        """Copy each node's new log bytes and note which nodes still run (``quiet``: skip nodes that fail)."""
        agents = self.group.agents
        refs = {agents[i].poll.remote(mirror.offsets(logs)): i for i, logs in enumerate(self._logs)}
        for node, answer in enumerate(self._answers(refs, quiet=quiet)):
            if answer is None:
                continue
            mirror.append(self._logs[node], answer["chunks"])
            if not quiet:
                self._running[node] = answer["running"]
            if answer["failed"] and self._failed_at is None:
                self._failed_at = time.monotonic()

    def _answers(self, refs: dict, quiet: bool = False) -> list:
        """Every node's answer (``refs``: pending answer -> node), in node order; NodeLost for a node that cannot
        answer (``quiet``: None for it instead)."""
        ray = ray_module()
        got = self.group.gather(refs)
        for node, exc in got.errors.items():
            if not isinstance(exc, ray.exceptions.RayActorError):
                raise exc
            if not quiet:
                self._confirm(node, exc)
        if got.late and not quiet:
            raise self._lost(got.late[0], f"it did not answer within {ANSWER_SECONDS:g} s")
        return got.values

    def _confirm(self, node: int, exc: BaseException) -> None:
        """Raise NodeLost unless the node's actor answers again within a few seconds."""
        if self.group.answers_again(node, exc):
            return
        first_line = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        raise self._lost(node, f"its actor is gone ({type(exc).__name__}: {first_line[:300]})")

    def _lost(self, node: int, reason: str) -> NodeLost:
        info = self.group.infos[node]
        return NodeLost(
            f"{info.describe()} was lost during the call: {reason}. The ranks of every other node were stopped; "
            f"look at logs/node_{node} for its last output.",
            node=node,
        )

    def _root_cause(self, failures: list[tuple[int, dict]]) -> DistributedError:
        """The first real failure across nodes: a peer's "connection closed" or a rank we stopped comes last,
        then the earliest error file."""

        def order(item):
            _, outcome = item
            error: DistributedError = outcome["failure"]
            text = f"{error.args[0]} {error.exception_message or ''}"
            secondary = error.exitcode in _SIGNALLED or any(p in text for p in _PEER_ERRORS)
            return (secondary, min(outcome["times"].values(), default=float("inf")))

        ranked = sorted(failures, key=order)
        node, first = ranked[0][0], ranked[0][1]["failure"]
        failed = {rank: text for _, outcome in failures for rank, text in outcome["failure"].failures.items()}
        after = ", ".join(
            f"node {n} rank {o['failure'].rank} ({describe_exit(o['failure'].exitcode)})" for n, o in ranked[1:]
        )
        info = self.group.infos[node]
        then = f" (then failed: {after})" if after else ""
        return DistributedError(
            f"node {node} ({info.hostname}, {info.ip}): {first.args[0]}{then}",
            rank=first.rank,
            node=node,
            exitcode=first.exitcode,
            exception_type=first.exception_type,
            exception_message=first.exception_message,
            worker_traceback=first.worker_traceback,
            failures=failed,
        )
