"""An attempt on several nodes of a Ray cluster, for the supervisor (the driver) with the interface of one node.

One :class:`~jupyter_air.workloads.supervisor.agent.WorkloadAgent` per node (a STRICT_SPREAD placement group, made
again for every attempt; the first attempt's started by the submitter while Ray starts the driver, see
:mod:`~jupyter_air.cluster.prestart`) runs the command with ``NODE_RANK``, ``NUM_NODES``, ``MASTER_ADDR`` and
``MASTER_PORT`` set, so ``torchrun --nnodes $NUM_NODES --node_rank $NODE_RANK ...`` works unchanged. The one
node-run driver (:class:`~jupyter_air.cluster.node_run.NodeRun`) starts, follows and stops the nodes and copies
each node's output and timestamps into ``logs/attempt_<n>/node_<i>/`` under the job's folder, where ``air logs``
reads them; this module adds what only an attempt has: each node's exit code, and the attempt's.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable
from pathlib import Path

from jupyter_air import procs
from jupyter_air.cluster import node_run, prestart
from jupyter_air.cluster.connect import connect, gpu_pool, ray_module
from jupyter_air.cluster.hosts import check_tracking, driver_host
from jupyter_air.cluster.placement import REPLY_SECONDS, NodeGroup, bundle
from jupyter_air.home import private_dir
from jupyter_air.tracking.lifecycle import system_metrics_interval
from jupyter_air.tracking.store import tracking_uri
from jupyter_air.tracking.system_metrics import gpu_choice
from jupyter_air.workloads.state.logs import OUTPUT, TIMESTAMPS, node_dir
from jupyter_air.workloads.supervisor.agent import WorkloadAgent
from jupyter_air.workloads.supervisor.runners import AttemptContext, reserve_gpus

#: The file of the job's folder that names the node actors its submitter started for the first attempt.
STARTED_NODES = "started-nodes.json"


class RayNodes:
    """The command of one attempt on ``compute.num_nodes`` nodes; see the module docstring."""

    pid: int | None = None
    started: float | None = None

    def __init__(self, context: AttemptContext):
        spec, compute = context.spec, context.spec["compute"]
        self.context = context
        self.spec = spec
        self.address = compute["ray_address"]
        self.count = compute["num_nodes"]
        self.gpus = compute["gpus_per_node"]
        self.marker = context.marker
        self.umask = context.umask
        self.log_dirs = [node_dir(context.job_dir, context.attempt, i) for i in range(self.count)]
        self.work: node_run.NodeRun | None = None
        self.problem: str | None = None

    @staticmethod
    def prestart(spec: dict, job_run_id: str, job_dir: Path) -> Callable[[], None]:
        """Start the first attempt's node actors now, for the job's driver that Ray is about to start; returns what
        frees them if it is not started after all."""
        compute, started = spec["compute"], job_dir / STARTED_NODES
        connect(compute["ray_address"])
        share = bundle(compute["gpus_per_node"], 1)
        prestart.prestart(WorkloadAgent, compute["num_nodes"], share, f"air-job-{job_run_id}", started)
        return lambda: prestart.drop(started)

    def place(self, cancel: threading.Event, note: Callable[[str], None]) -> bool:
        """Take the job's turn for the cluster's GPUs in the GPU ledger (kept for the whole job), then take the node
        actors its submitter started, or reserve one bundle per node and start their actors (False when canceled
        while waiting for either). Started actors are freed at once when the job has to wait for its turn.

        Raises a ClusterError, before any run exists, when the cluster cannot be joined, can never hold the
        nodes, or spans hosts the tracking store cannot be reached from.
        """
        connect(self.address)
        started = self.context.job_dir / STARTED_NODES
        try:
            group = self._place(cancel, note, started)
        finally:
            prestart.drop(started)  # those not taken
        if group is None:
            return False
        copies = [{OUTPUT: d / OUTPUT, TIMESTAMPS: d / TIMESTAMPS} for d in self.log_dirs]
        self.work = node_run.NodeRun(group, copies)
        return True

    def _place(self, cancel: threading.Event, note: Callable[[str], None], started: Path) -> NodeGroup | None:
        def waiting(message: str) -> None:  # for the GPUs of jobs before it: the started actors let them go
            prestart.drop(started)
            note(message)

        pool, size = gpu_pool()
        if reserve_gpus(self.context, cancel, waiting, self.count * self.gpus, pool, range(size)) is None:
            return None

        def check_hosts(hosts: list[str]) -> None:
            check_tracking(hosts, driver_host(), tracking_uri(), f"this workload on {self.count} node(s)")

        share = bundle(self.gpus, 1)
        taken = prestart.take(started, share, check_hosts)
        if taken is not None:
            return taken
        return NodeGroup.place(
            WorkloadAgent, self.count, share, cancelled=cancel.is_set, waiting=note, check_hosts=check_hosts
        )

    @property
    def exit_codes(self) -> list[int | None]:
        return [state and state["exit_code"] for state in self.work.states]

    @property
    def nodes(self) -> list[dict]:
        """Where each node ran and how its command ended, for ``air get``."""
        infos = self.work.group.infos
        return [{**info.to_json(), "exit_code": code} for info, code in zip(infos, self.exit_codes, strict=True)]

    def start(self, overrides: dict[str, str], run) -> None:
        """Start the command on every node with its node's environment plus ``overrides`` and the node variables;
        each node samples its system metrics into ``run`` (a ManagedRun) from just before its command starts."""
        for folder in self.log_dirs:
            private_dir(folder)
        with self._trouble_as_problem():
            sampling = (run.run_id, overrides["MLFLOW_TRACKING_URI"], system_metrics_interval(), gpu_choice())
            self.work.ask("sample_metrics", lambda node: sampling)
            shared = {"NUM_NODES": str(self.count), "MASTER_ADDR": self.work.group.infos[0].ip}
            shared["MASTER_PORT"] = str(self.work.port())
            command, cwd = self.spec["command"], self.spec["code_source"]["root_path"]

            def node_args(node: int) -> tuple:
                return command, cwd, {**overrides, **shared, "NODE_RANK": str(node)}, self.marker, self.umask

            self.work.start("start", node_args)

    def wait(self, timeout: float) -> int | None:
        """The attempt's exit status once every node's command ended (the first failing node's), else None.

        A node that fails gives the others the driver's failure grace to end before they are stopped; a node
        that is lost, or whose log cannot be written, sets :attr:`problem` (the supervisor then stops the rest).
        """
        with self._trouble_as_problem():
            self.work.join(timeout)
        states = self.work.states
        if self.problem is None:
            said = [(i, s["problem"]) for i, s in enumerate(states) if s and s["problem"]]
            self.problem = f"{self.work.describe(said[0][0])}: {said[0][1]}" if said else None
        if self.problem or self.work.running:
            return None
        codes = self.exit_codes
        failed = [i for i, code in enumerate(codes) if code not in (None, 0)]
        if failed:
            first = failed[0]
            self.problem = f"{self.work.describe(first)}: command exited with code {codes[first]}"
            return codes[first]
        return 0

    def stop(self, grace_seconds: float = procs.TERM_GRACE_SECONDS) -> int | None:
        """Stop the command on every node that answers; the exit status of the first node that ended badly."""
        self.work.stop(grace_seconds)
        return next((code for code in self.exit_codes if code not in (None, 0)), None)

    def finish(self) -> None:
        """Let every node's pump write the rest and its metrics take their last sample (as long as a busy node is
        waited for), copy it, then kill the actors and free the nodes (once)."""
        if self.work is None or self.work.group.closed:
            return
        group = self.work.group
        try:
            refs = [agent.finish.remote() for agent in group.agents]
            ray_module().wait(refs, num_returns=len(refs), timeout=node_run.BUSY_ROUNDS * REPLY_SECONDS)
            self.work.poll(quiet=True)
        finally:
            group.close()

    @contextlib.contextmanager
    def _trouble_as_problem(self):
        """A lost node, or an agent that raised, as the attempt's :attr:`problem` (the first one is kept)."""
        try:
            yield
        except (node_run.NodeUnreachable, node_run.NodeFailed) as exc:
            if self.problem is None:
                self.problem = str(exc)
