"""A Ray cluster on this machine's loopback for tests and benchmarks: nodes with fake GPUs, teardown by recorded PID.

Import it before Ray: it sets the environment Ray reads when imported. Every node, and this process's
driver, uses 127.0.0.1; Ray's temporary folder is a short private one (Unix socket paths are limited). Every
cluster requires Ray's token (token authentication, a new token for each process that imports this module):
this process, the nodes and what they start (kernels, ``air``, Ray workers) have it in their environment.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import signal
import socket
import tempfile
from pathlib import Path
from unittest import mock

import psutil

# Without it Ray swaps 127.0.0.1 for the machine's interface address and connects there.
os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")  # never report usage over the network
# Without a token every local user can run code on the cluster as this user (tests/cluster/test_cluster_auth.py).
os.environ["RAY_AUTH_MODE"] = "token"
os.environ["RAY_AUTH_TOKEN"] = secrets.token_hex(32)
os.environ.pop("RAY_AUTH_TOKEN_PATH", None)

LOOPBACK = "127.0.0.1"
#: Environment variables that mark processes a node actor started, and its guard.
AGENT_ENV, GUARD_ENV = "AIR_AGENT_ID", "AIR_AGENT_GUARD"
#: Marks every process of a cluster's nodes (its folder), whatever Ray renames it to.
CLUSTER_ENV = "AIR_TEST_RAY_CLUSTER"
#: Tries to start one node (see LocalCluster._started).
_NODE_TRIES = 3
#: The folders of the clusters this process started: the processes of another process's test cluster (the browser
#: tests' servers run one beside the Python tests) are not this process's to count.
STARTED_HERE: set[str] = set()


def free_port() -> int:
    with socket.socket() as s:
        s.bind((LOOPBACK, 0))
        return s.getsockname()[1]


class LocalCluster:
    """A head node (1 CPU, no GPU: the driver's) plus worker nodes added with :meth:`add_node`.

    ``client_port``: also serve Ray Client (``ray://127.0.0.1:<port>``) from the head. ``environment``: variables
    every node's processes (and so every actor) see, on top of this process's. ``dashboard``: also run the
    dashboard with its job server (``dashboard_url``) on 127.0.0.1. The head's dashboard agent (where jobs run)
    listens on ``agent_port``.
    """

    def __init__(
        self, client_port: int | None = None, environment: dict[str, str] | None = None, dashboard: bool = False
    ):
        from ray.cluster_utils import Cluster

        self.root = Path(tempfile.mkdtemp(prefix="air-ray-", dir="/tmp"))
        STARTED_HERE.add(str(self.root))
        self.temp_dir = self.root / "ray"
        self.temp_dir.mkdir()
        os.environ["RAY_TMPDIR"] = str(self.root)  # Ray's address file and sessions go here, not in /tmp/ray
        self.pids: dict[int, float] = {}
        self.client_port = client_port
        (self.root / "tmp").mkdir()  # the nodes' temporary files (actors' folders), removed with the cluster
        self.environment = {**(environment or {}), CLUSTER_ENV: str(self.root), "TMPDIR": str(self.root / "tmp")}
        self.agent_port = free_port()
        web = {"dashboard_host": LOOPBACK, "dashboard_port": free_port()} if dashboard else {}
        with self._environment():
            self.cluster = self._started(
                lambda: Cluster(
                    initialize_head=True,
                    head_node_args={
                        "num_cpus": 1,
                        "node_ip_address": LOOPBACK,
                        "include_dashboard": dashboard,
                        **web,
                        "dashboard_agent_listen_port": self.agent_port,
                        "temp_dir": str(self.temp_dir),
                        **({"ray_client_server_port": client_port} if client_port else {}),
                    },
                )
            )
        self._record(self.cluster.head_node)

    @property
    def address(self) -> str:
        return self.cluster.address

    @property
    def dashboard_url(self) -> str:
        return "http://" + self.cluster.head_node.address_info["webui_url"]

    def add_node(self, gpus: int = 2, cpus: int = 2, host: str | None = None, environment: dict | None = None):
        """A worker node with ``gpus`` fake GPUs; ``host`` labels it as another machine (``air.io/host``);
        ``environment``: variables its processes see on top of the cluster's."""
        labels = {"air.io/host": host} if host else None
        with self._environment(environment):
            node = self._started(
                lambda: self.cluster.add_node(
                    num_cpus=cpus,
                    num_gpus=gpus,
                    node_ip_address=LOOPBACK,
                    temp_dir=str(self.temp_dir),
                    **({"labels": labels} if labels else {}),
                )
            )
        self._record(node)
        return node

    def _started(self, start):
        """``start()`` of a node, tried again when Ray gave up on it: a raylet waits 15 s at most for its dashboard
        agent, whose start can take longer on a loaded machine. The failed try's processes are killed first."""
        for tries_left in range(_NODE_TRIES - 1, -1, -1):
            try:
                return start()
            except Exception as exc:
                _kill(self._strays())
                if tries_left and "timed out during startup" in str(exc):
                    continue
                if not self.pids:  # not even the head started: nothing of this cluster is left
                    shutil.rmtree(self.root, ignore_errors=True)
                    if os.environ.get("RAY_TMPDIR") == str(self.root):
                        del os.environ["RAY_TMPDIR"]
                raise

    def _strays(self) -> dict[int, float]:
        """This cluster's processes that belong to no started node (those of a node that failed to start)."""
        kept, found = _tree(self.pids), {}
        for proc in psutil.process_iter():
            with contextlib.suppress(psutil.Error):
                if proc.pid not in kept and proc.environ().get(CLUSTER_ENV) == str(self.root):
                    found[proc.pid] = proc.create_time()
        return found

    def _environment(self, extra: dict | None = None):
        """This process's environment plus ``environment`` (and ``extra``) while a node starts (its processes
        inherit it)."""
        return mock.patch.dict(os.environ, {**self.environment, **(extra or {})})

    def wait_for_nodes(self) -> None:
        self.cluster.wait_for_nodes()

    def _record(self, node) -> None:
        for infos in node.all_processes.values():
            for info in infos:
                with contextlib.suppress(psutil.Error):
                    self.pids[info.process.pid] = psutil.Process(info.process.pid).create_time()

    def kill_raylet(self, node) -> None:
        """SIGKILL one node's raylet, as when its machine dies."""
        node.all_processes["raylet"][0].process.kill()

    def remove_node(self, node) -> None:
        self.cluster.remove_node(node, allow_graceful=False)

    def shutdown(self) -> None:
        """Stop every node and kill whatever is left of their processes (collected before, by recorded PID)."""
        import ray

        tree = _tree(self.pids)
        try:
            if ray.is_initialized():
                ray.shutdown()
            for node in [*self.cluster.worker_nodes, self.cluster.head_node]:
                if node is not None:  # not gracefully: whatever is left is killed below anyway
                    self.cluster.remove_node(node, allow_graceful=False)
            self.cluster.shutdown()
        finally:
            _kill(tree | _tree(self.pids))
            _kill(self._strays())  # any left that Ray no longer counted as a node's (a node's agents, renamed)
            shutil.rmtree(self.root, ignore_errors=True)
            if os.environ.get("RAY_TMPDIR") == str(self.root):
                del os.environ["RAY_TMPDIR"]


def _tree(pids: dict[int, float]) -> dict[int, float]:
    """The recorded processes still alive (same start time) and all their descendants."""
    found = {}
    for pid, created in pids.items():
        with contextlib.suppress(psutil.Error):
            proc = psutil.Process(pid)
            if abs(proc.create_time() - created) > 1:
                continue
            for p in [proc, *proc.children(recursive=True)]:
                with contextlib.suppress(psutil.Error):
                    found[p.pid] = p.create_time()
    return found


def _kill(pids: dict[int, float]) -> None:
    procs = []
    for pid, created in pids.items():
        with contextlib.suppress(psutil.Error):
            proc = psutil.Process(pid)
            if abs(proc.create_time() - created) <= 1:
                proc.kill()
                procs.append(proc)
    psutil.wait_procs(procs, timeout=5)


def _another_process_cluster(env: dict[str, str]) -> bool:
    """Whether a process of environment ``env`` runs on a test cluster another process started."""
    root = env.get(CLUSTER_ENV)
    return root is not None and root not in STARTED_HERE


def agent_processes() -> list[psutil.Process]:
    """Live processes a node actor started (forkservers, ranks, workload commands) and the actors' guards, on the
    nodes of any cluster but another process's test cluster."""
    found = []
    for proc in psutil.process_iter():
        with contextlib.suppress(psutil.Error):
            env = proc.environ()
            agent = (AGENT_ENV in env or GUARD_ENV in env) and not _another_process_cluster(env)
            if agent and proc.status() != psutil.STATUS_ZOMBIE:
                found.append(proc)
    return found


def job_processes(job_run_id: str) -> list[psutil.Process]:
    """Live processes of a job on any node: its attempts' (they carry AIR_JOB_RUN_ID) and its supervisor (its
    command line names the job)."""
    found = []
    for proc in psutil.process_iter(["cmdline"]):
        with contextlib.suppress(psutil.Error):
            marked = proc.environ().get("AIR_JOB_RUN_ID") == job_run_id
            if (marked or job_run_id in " ".join(proc.info["cmdline"] or [])) and proc.status() != "zombie":
                found.append(proc)
    return found


def actor_processes(class_name: str) -> list[psutil.Process]:
    """Live Ray worker processes running an actor of ``class_name`` (Ray titles them ``ray::<Class>...``), on the
    nodes of any cluster but another process's test cluster."""
    found = []
    for proc in psutil.process_iter(["cmdline", "status"]):
        cmdline = " ".join(proc.info["cmdline"] or [])
        if cmdline.startswith(f"ray::{class_name}") and proc.info["status"] != psutil.STATUS_ZOMBIE:
            with contextlib.suppress(psutil.Error):
                if not _another_process_cluster(proc.environ()):
                    found.append(proc)
    return found


def free_parked(address: str) -> None:
    """End the keepers of node actors that remote calls parked, and free those actors (a test that failed before its
    Release left them): they would hold the cluster's GPUs for minutes."""
    from jupyter_air.cluster import keeper
    from jupyter_air.cluster.connect import connect

    for proc in psutil.process_iter(["cmdline"]):  # whatever AIR_HOME they list the nodes in
        with contextlib.suppress(psutil.Error):
            if "jupyter_air.cluster.keeper" in " ".join(proc.info["cmdline"] or []):
                proc.send_signal(signal.SIGUSR1)
    import ray

    connect(address)
    with contextlib.suppress(ray.exceptions.RayError):  # an actor ends while it answers: freed all the same
        ray.get(keeper.free_parked(), timeout=30)
