"""A call spread over several Ray nodes, driven from the notebook with the interface of
:class:`~jupyter_air.training.node_call.Call`.

One actor per node (:class:`~jupyter_air.training.agent.TrainingAgent`, in a STRICT_SPREAD placement group)
runs that node's share of the elastic launch; ranks rendezvous on node 0. The one node-run driver
(:class:`~jupyter_air.cluster.node_run.NodeRun`) starts, follows and stops them and copies each rank's new log
bytes into local files (the cell prints them, the run keeps them); this module adds what only a call has: its
results, and the root cause of a failure across nodes (:mod:`.cluster_failure`). Actors are kept for the next call
of the same shape (about 0.6 s instead of 5 s), by the kernel (:mod:`.kept`) or parked on the cluster by a remote
call (:mod:`.parked`); any call stopped early kills them.

Before it asks Ray for GPUs, a call is admitted to the cluster's pool of the GPU ledger (``admit``), as a call on
one machine is to that machine's: who asks Ray next goes by the same queue, fair share and quotas, and Ray places
what was admitted. The claim ends with the call: the nodes kept for the next call hold none, and that call takes
its turn again (its kept nodes are freed if it has to wait).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path

from jupyter_air import scratch
from jupyter_air.cluster import node_run
from jupyter_air.cluster.connect import connect, gpu_pool, ray_module
from jupyter_air.cluster.hosts import check_tracking, driver_host
from jupyter_air.cluster.placement import NodeGroup, bundle, describe_bundle
from jupyter_air.tracking.lifecycle import system_metrics_interval
from jupyter_air.tracking.naming import GPUS_TAG, NODES_TAG, RAY_ADDRESS_TAG, WORLD_SIZE_TAG, call_logs_folder
from jupyter_air.tracking.store import tracking_uri
from jupyter_air.tracking.system_metrics import gpu_choice
from jupyter_air.training.agent import TrainingAgent
from jupyter_air.training.cluster_failure import root_cause
from jupyter_air.training.errors import NodeLost
from jupyter_air.training.gpu_claim import HeldGpus
from jupyter_air.training.kept import Kept
from jupyter_air.training.launch_plan import NodePlace
from jupyter_air.training.options import RunOptions

#: Seconds to wait for free nodes before the call fails (nothing has started then, no run exists).
PLACEMENT_WAIT_SECONDS = 60.0
#: Seconds every node gets to stop its ranks (SIGTERM, then SIGKILL) before its actor is killed anyway.
_STOP_SECONDS = 15.0
#: ``admit(count, pool, size, note)``: ``count`` of the ``size`` GPUs of the cluster's ledger ``pool`` held for the
#: call (None: canceled while it waited its turn).
Admit = Callable[[int, str, int, Callable[[str], None]], HeldGpus | None]


def _shape(ray, gpus: int | None, nodes: int) -> tuple[int, int]:
    """``(ranks per node, GPUs per node)``: like one node, ``gpus`` CPU ranks on a cluster without GPUs."""
    counts = sorted((int(n["Resources"].get("GPU", 0)) for n in ray.nodes() if n.get("Alive")), reverse=True)
    if not counts or counts[0] == 0:
        return (gpus or 1), 0
    per_node = gpus if gpus is not None else max(counts[min(nodes, len(counts)) - 1], 1)
    return per_node, per_node


class ClusterCall:
    """``function`` on ``options.nodes`` nodes of the Ray cluster at ``address``; see the module docstring."""

    def __init__(self, payload: bytes, context: dict, options: RunOptions, address: str, admit: Admit, keep=Kept):
        self.payload = payload
        self.keep = keep  # Kept: this process keeps the actors; Parked: a remote call's, parked on the cluster
        self.admit = admit
        self.context = context
        self.options = options
        self.address = address
        self.nodes = options.nodes
        self.folder = scratch.make("air-call-")
        self.group: NodeGroup | None = None
        self.work: node_run.NodeRun | None = None
        self.tags: dict[str, str] = {}
        self._key: tuple = ()
        self._logs: list[dict[int, Path]] = []
        self._reusable = False
        self.held = HeldGpus()

    # The interface of node_call.Call, in the order the notebook API uses it.

    def start(self, note=lambda what: None) -> bool:
        """Join the cluster, take its turn for the cluster's GPUs, place one actor per node (or reuse the last
        call's), start every node's ranks; ``note(what)`` hears what it waits for. False: canceled in line."""
        note(f"joining the Ray cluster at {self.address}")
        ray = ray_module()
        generation = connect(self.address)
        nproc, gpus = _shape(ray, self.options.gpus, self.nodes)
        share = bundle(gpus, nproc)
        self._key = (generation, self.nodes, tuple(sorted(share.items())))

        def check_hosts(hosts: list[str]) -> None:
            check_tracking(hosts, driver_host(), tracking_uri(), f"this call on {self.nodes} nodes")

        self.group = self.keep.take(self._key)  # cleanup() closes it should the call not start (refused, canceled)
        held = self._admitted(gpus * self.nodes, note, self.group)
        if held is None:
            return False
        self.held = held  # given back by cleanup()
        if self.group is None or self.group.closed:
            note(f"placing {self.nodes} nodes with {describe_bundle(share)} each")
            self.group = NodeGroup.place(
                TrainingAgent,
                self.nodes,
                share,
                wait_seconds=PLACEMENT_WAIT_SECONDS,
                waiting=note,
                check_hosts=check_hosts,
                names=self.keep.names(self._key),
            )
        note(f"starting the ranks on {self.nodes} nodes")
        try:
            check_hosts(self.group.hosts)
            with self._lost_as_call_error():
                self._launch(ray, nproc)
        except BaseException:
            self.group.close()
            raise
        self.tags = {
            NODES_TAG: str(self.nodes),
            GPUS_TAG: str(gpus * self.nodes),
            WORLD_SIZE_TAG: str(nproc * self.nodes),
            RAY_ADDRESS_TAG: self.address,
        }
        return True

    def _admitted(self, count: int, note, kept: NodeGroup | None) -> HeldGpus | None:
        """The call's turn for ``count`` of the cluster's GPUs; nodes this kernel kept are freed once it must wait
        (they would hold GPUs that the work ahead of it waits for)."""
        if not count:
            return HeldGpus()  # CPU ranks hold no GPU

        def waiting(what: str) -> None:
            if kept is not None:
                kept.close()
            note(what)

        pool, size = gpu_pool()
        return self.admit(count, pool, size, waiting)

    def _launch(self, ray, nproc: int) -> None:
        for node in range(self.nodes):
            folder = self.folder / f"node_{node}"
            folder.mkdir()
            self._logs.append({rank: folder / f"rank_{rank}.log" for rank in range(node * nproc, (node + 1) * nproc)})
            for path in self._logs[-1].values():
                path.touch()
        self.work = node_run.NodeRun(self.group, self._logs)
        endpoint = f"{self.group.infos[0].ip}:{self.work.port()}"
        run_id = f"air-{uuid.uuid4().hex[:12]}"
        infos = self.group.infos
        places = [NodePlace(nproc, self.nodes, i, endpoint, info.ip, run_id) for i, info in enumerate(infos)]
        payload = ray.put(self.payload)
        self.work.start("start", lambda node: (payload, self.context, places[node]))

    def release(self, overrides: dict[str, str]) -> None:
        """Let every node's ranks run with their node's environment, this kernel's ``MLFLOW_*`` and ``overrides``;
        each node samples its system metrics into the run from just before, unless the call said not to."""
        env = {**{k: v for k, v in os.environ.items() if k.startswith("MLFLOW_")}, **overrides}
        with self._lost_as_call_error():
            if self.options.log_system_metrics:
                sampling = (env["MLFLOW_RUN_ID"], env["MLFLOW_TRACKING_URI"], system_metrics_interval(), gpu_choice())
                self.work.ask("sample_metrics", lambda node: sampling)
            self.work.ask("release", lambda node: (env,))

    def sample_metrics(self, run, gpus: Sequence[str]) -> None:
        """Nothing more: each node samples its own system metrics into the run, as :meth:`release` asked."""

    @property
    def running(self) -> bool:
        return self.work is not None and self.work.running

    def join(self, timeout: float) -> None:
        """Wait up to ``timeout`` seconds for a node to end, then copy new log bytes; raises NodeLost."""
        with self._lost_as_call_error():
            self.work.join(timeout)

    def stop(self) -> None:
        """Stop every node that still runs (a timeout, an interrupt, a lost node); their actors are killed after."""
        if self.group is None or self.group.closed or not self.running:
            return
        try:
            self.work.stop(_STOP_SECONDS)
        finally:
            self.group.close()

    def results(self) -> list:
        """Each rank's return value by global rank; raises DistributedError with the root cause across nodes."""
        import cloudpickle

        with self._lost_as_call_error():
            outcomes = self.work.ask("outcome")
            self.work.poll()
        failures = [(node, outcome) for node, outcome in enumerate(outcomes) if "failure" in outcome]
        for node, _ in failures:  # ranks that died with their node: the node's loss is the cause
            if not self.group.answers_again(node):
                raise self._lost(node, "its raylet or actor is gone")
        self._reusable = True
        if failures:
            raise root_cause(failures, self.group.infos)
        values = {}
        for outcome in outcomes:
            values.update(outcome["results"])
        return [cloudpickle.loads(values[rank]) for rank in sorted(values)]

    def cleanup(self) -> None:
        """Keep the actors for the next call when this one ended by itself, else kill them; delete local logs."""
        group = self.group
        try:
            if group is not None and not group.closed:
                self._keep_or_close(group)
        finally:
            self.held.release()  # kept nodes hold no claim: the next call takes its turn again
        shutil.rmtree(self.folder, ignore_errors=True)

    def _keep_or_close(self, group: NodeGroup) -> None:
        try:
            refs = {a.cleanup.remote(): i for i, a in enumerate(group.agents)} if self._reusable else None
            got = group.gather(refs) if refs else None
            if got is None or got.errors or got.late:
                group.close()  # stopped early, or a node is gone: never keep it (nor hide the call's outcome)
            else:
                self.keep.keep(self._key, group, self.address)
        except BaseException:
            group.close()
            raise

    def log_files(self) -> dict[str, dict[int, Path]]:
        """``{artifact folder: {global rank: local copy of the log}}``: ``logs/node_<n>/rank_<r>.log``."""
        return {call_logs_folder(node): dict(logs) for node, logs in enumerate(self._logs)}

    # What only a call makes of the nodes' answers.

    @contextlib.contextmanager
    def _lost_as_call_error(self):
        """The driver's NodeUnreachable as the call's NodeLost; what an agent raised, as it raised it."""
        try:
            yield
        except node_run.NodeUnreachable as exc:
            raise self._lost(exc.node, exc.reason) from None
        except node_run.NodeFailed as exc:
            raise exc.cause from None

    def _lost(self, node: int, reason: str) -> NodeLost:
        info = self.group.infos[node]
        return NodeLost(
            f"{info.describe()} was lost during the call: {reason}. The ranks of every other node were stopped; "
            f"look at {call_logs_folder(node)} for its last output.",
            node=node,
        )
