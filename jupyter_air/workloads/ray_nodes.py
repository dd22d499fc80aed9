"""An attempt on several nodes of a Ray cluster, for the supervisor (the driver) with the interface of one node.

One :class:`~jupyter_air.workloads.agent.WorkloadAgent` per node (a STRICT_SPREAD placement group, made
again for every attempt) runs the command with ``NODE_RANK``, ``NUM_NODES``, ``MASTER_ADDR`` and
``MASTER_PORT`` set, so ``torchrun --nnodes $NUM_NODES --node_rank $NODE_RANK ...`` works unchanged. The
driver copies each node's output and timestamps into ``logs/attempt_<n>/node_<i>/`` under the job's folder,
where ``air logs`` reads them.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path

from jupyter_air.cluster import mirror
from jupyter_air.cluster.connect import connect, ray_module
from jupyter_air.cluster.hosts import check_tracking, driver_host
from jupyter_air.cluster.placement import ANSWER_SECONDS, NodeGroup, bundle
from jupyter_air.home import private_dir
from jupyter_air.workloads.agent import WorkloadAgent
from jupyter_air.workloads.logs import OUTPUT, TIMESTAMPS, node_dir

#: Seconds the other nodes get to end by themselves once one node's command failed, before they are stopped.
FAILURE_GRACE_SECONDS = 10.0


class RayNodes:
    """The command of one attempt on ``compute.num_nodes`` nodes; see the module docstring."""

    pid: int | None = None
    started: float | None = None

    def __init__(self, spec: dict, job_dir: Path, attempt: int, marker: dict[str, str], umask: int | None):
        compute = spec["compute"]
        self.spec = spec
        self.address = compute["ray_address"]
        self.count = compute["num_nodes"]
        self.gpus = compute["gpus_per_node"]
        self.marker = marker
        self.umask = umask
        self.log_dirs = [node_dir(job_dir, attempt, i) for i in range(self.count)]
        self.group: NodeGroup | None = None
        self.problem: str | None = None
        self.exit_codes: list[int | None] = [None] * self.count
        self._copies = [{OUTPUT: d / OUTPUT, TIMESTAMPS: d / TIMESTAMPS} for d in self.log_dirs]
        self._waits: dict = {}
        self._failed_at: float | None = None

    def place(self, cancel: threading.Event, note: Callable[[str], None]) -> bool:
        """Reserve one bundle per node and start their actors (False when canceled while waiting for them).

        Raises a ClusterError, before any run exists, when the cluster cannot be joined, can never hold the
        nodes, or spans hosts the tracking store cannot be reached from.
        """
        from jupyter_air.tracking.store import tracking_uri

        connect(self.address)

        def check_hosts(hosts: list[str]) -> None:
            check_tracking(hosts, driver_host(), tracking_uri(), f"this workload on {self.count} node(s)")

        self.group = NodeGroup.place(
            WorkloadAgent,
            self.count,
            bundle(self.gpus, 1),
            cancelled=cancel.is_set,
            waiting=note,
            check_hosts=check_hosts,
        )
        return self.group is not None

    @property
    def nodes(self) -> list[dict]:
        """Where each node ran and how its command ended, for ``air get``."""
        return [
            {**info.to_json(), "exit_code": code} for info, code in zip(self.group.infos, self.exit_codes, strict=True)
        ]

    def start(self, overrides: dict[str, str], metrics_interval_seconds: float | None) -> None:
        """Start the command on every node with its node's environment plus ``overrides`` and the node variables."""
        ray = ray_module()
        infos, agents = self.group.infos, self.group.agents
        port = ray.get(agents[0].free_port.remote(infos[0].ip), timeout=ANSWER_SECONDS)
        for folder in self.log_dirs:
            private_dir(folder)
        shared = {"NUM_NODES": str(self.count), "MASTER_ADDR": infos[0].ip, "MASTER_PORT": str(port)}
        command, cwd = self.spec["command"], self.spec["code_source"]["root_path"]
        refs = {
            agent.start.remote(command, cwd, {**overrides, **shared, "NODE_RANK": str(i)}, self.marker, self.umask): i
            for i, agent in enumerate(agents)
        }
        self._answers(refs)
        if metrics_interval_seconds is not None:
            run, uri = overrides["MLFLOW_RUN_ID"], overrides["MLFLOW_TRACKING_URI"]
            self._answers(
                {a.sample_metrics.remote(run, uri, metrics_interval_seconds): i for i, a in enumerate(agents)}
            )
        self._waits = {agent.wait.remote(): i for i, agent in enumerate(agents)}

    def wait(self, timeout: float) -> int | None:
        """The attempt's exit status once every node's command ended (the first failing node's), else None.

        A node that fails gives the others ``FAILURE_GRACE_SECONDS`` to end before they are stopped; a node
        that is lost sets :attr:`problem` (the supervisor then stops the rest).
        """
        ray = ray_module()
        if self._waits:
            ready, _ = ray.wait(list(self._waits), num_returns=1, timeout=timeout)
            for ref in ready:
                node = self._waits.pop(ref)
                try:
                    ray.get(ref)
                except ray.exceptions.RayActorError as exc:
                    if self._confirm(node, exc):
                        self._waits[self.group.agents[node].wait.remote()] = node
        else:
            time.sleep(timeout)
        if self.problem:
            return None
        self._poll()
        failed = [i for i, code in enumerate(self.exit_codes) if code not in (None, 0)]
        running = [i for i, code in enumerate(self.exit_codes) if code is None]
        if failed and running and time.monotonic() - (self._failed_at or time.monotonic()) > FAILURE_GRACE_SECONDS:
            self._answers({self.group.agents[i].stop.remote(2.0): i for i in running})
            self._poll()
            running = [i for i, code in enumerate(self.exit_codes) if code is None]
        if running or self.problem:
            return None
        if failed:
            first = failed[0]
            self.problem = f"{self.group.infos[first].describe()}: command exited with code {self.exit_codes[first]}"
            return self.exit_codes[first]
        return 0

    def stop(self, grace_seconds: float = 5.0) -> int | None:
        """Stop the command on every node that answers; the exit status of the first node that ended badly."""
        ray = ray_module()
        refs = [agent.stop.remote(grace_seconds) for agent in self.group.agents]
        ready, _ = ray.wait(refs, num_returns=len(refs), timeout=grace_seconds + ANSWER_SECONDS)
        for node, ref in enumerate(refs):
            if ref in ready:
                try:
                    self.exit_codes[node] = ray.get(ref)
                except ray.exceptions.RayError:
                    continue
        return next((code for code in self.exit_codes if code not in (None, 0)), None)

    def finish(self) -> None:
        """Let every node's pump write the rest, copy it, then kill the actors and free the nodes (once)."""
        if self.group is None or self.group.closed:
            return
        try:
            if self._waits or any(code is not None for code in self.exit_codes):
                ray = ray_module()
                refs = [agent.finish.remote() for agent in self.group.agents]
                ray.wait(refs, num_returns=len(refs), timeout=ANSWER_SECONDS)
                self._poll(quiet=True)
        finally:
            self.group.close()

    def _poll(self, quiet: bool = False) -> None:
        agents = self.group.agents
        refs = {agents[i].poll.remote(mirror.offsets(copies)): i for i, copies in enumerate(self._copies)}
        for node, answer in enumerate(self._answers(refs, quiet=quiet)):
            if answer is None:
                continue
            mirror.append(self._copies[node], answer["chunks"])
            if answer["exit_code"] is not None and self.exit_codes[node] is None:
                self.exit_codes[node] = answer["exit_code"]
                if answer["exit_code"] != 0 and self._failed_at is None:
                    self._failed_at = time.monotonic()
            if answer["problem"] and not self.problem and not quiet:
                self.problem = f"{self.group.infos[node].describe()}: {answer['problem']}"

    def _answers(self, refs: dict, quiet: bool = False) -> list:
        """Every node's answer in node order; a node that cannot answer sets :attr:`problem` (None for it)."""
        ray = ray_module()
        got = self.group.gather(refs)
        for node, exc in got.errors.items():
            if isinstance(exc, ray.exceptions.RayActorError):
                if not quiet:
                    self._confirm(node, exc)
            elif not isinstance(exc, ray.exceptions.RayTaskError):
                raise exc
            elif not quiet and not self.problem:
                self.problem = f"{self.group.infos[node].describe()}: {exc.cause}"
        if got.late and not quiet and not self.problem:
            self.problem = f"{self.group.infos[got.late[0]].describe()} did not answer within {ANSWER_SECONDS:g} s"
        return got.values

    def _confirm(self, node: int, exc: BaseException) -> bool:
        """True when the node's actor answers again (Ray calls some errors transient); else the node is lost."""
        if self.group.answers_again(node, exc):
            return True
        if not self.problem:
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
            self.problem = f"{self.group.infos[node].describe()} was lost ({type(exc).__name__}: {first[:300]})"
        return False
