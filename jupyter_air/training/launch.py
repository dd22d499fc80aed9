"""Start one worker process per rank with PyTorch's elastic launcher and stop them all on demand.

A :class:`Call` is one node's share of a launch: every rank on one node, or (``NodePlace.nnodes > 1``)
node ``node_rank``'s ranks of a launch that other nodes' calls join through node 0's rendezvous store.
"""

from __future__ import annotations

import functools
import json
import linecache
import os
import pathlib
import shutil
import sys
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass, field

from jupyter_air.procs import ProcessTree
from jupyter_air.training.errors import DistributedError, describe_exit
from jupyter_air.training.pickling import dumps

#: Start method for workers. A fork server is a fresh interpreter that imports torch but never
#: touches CUDA; each rank is forked from it, so no rank inherits the kernel's CUDA context,
#: threads or locks (plain ``fork`` would), and after the first call a rank starts in a fraction
#: of ``spawn``'s time because torch is already imported.
START_METHOD = "forkserver"
_FORKSERVER_PRELOAD = ["torch", "torch.distributed", "cloudpickle", "jupyter_air.training.worker"]
#: Seconds to wait for the launcher to notice stopped workers before giving up on it.
_STOP_DEADLINE_SECONDS = 10.0
#: Environment variable every process of a call inherits (ranks' children and daemons included).
CALL_ID_ENV = "AIR_CALL_ID"
#: The thread that runs the elastic agent, which starts the ranks.
AGENT_THREAD = "air-elastic-agent"
#: Collective libraries' socket interface variables: set to the interface of the node's address unless the
#: user chose one (loopback on one node).
_INTERFACE_VARIABLES = ("GLOO_SOCKET_IFNAME", "NCCL_SOCKET_IFNAME")
#: Seconds a node of a multi-node launch waits for the others at the rendezvous before it gives up.
JOIN_TIMEOUT_SECONDS = 60

_INSTALL_HINT = (
    "`.distributed()` needs PyTorch: install it with `pip install 'jupyter-air[distributed]'` "
    "(or `pip install torch`) in this kernel's environment, then restart the kernel."
)


def require_torch():
    """Import torch or explain how to install it."""
    try:
        import torch
    except ImportError as exc:
        raise DistributedError(_INSTALL_HINT) from exc
    return torch


def world_size_for(gpus: int | None) -> tuple[int, int]:
    """``(processes, gpus_used)``: one process per GPU, or ``gpus`` CPU processes on a node without GPUs.

    ``gpus`` is checked by :class:`~jupyter_air.training.options.RunOptions` when the call is defined.
    """
    visible = require_torch().cuda.device_count()
    if visible == 0:
        return (gpus or 1), 0
    if gpus is not None and gpus > visible:
        raise ValueError(
            f"gpus={gpus} but this node has {visible} visible GPU(s)"
            " (CUDA_VISIBLE_DEVICES limits them): ask for at most that many"
        )
    count = gpus or visible
    return count, count


def notebook_sources() -> dict[str, list[str]]:
    """Source lines of code with no file on disk (notebook cells), so worker tracebacks can show them."""
    return {
        name: list(entry[2])
        for name, entry in list(linecache.cache.items())
        if len(entry) == 4 and entry[1] is None and entry[2]
    }


def _ranks_skip_the_main_module() -> None:
    """Start ranks without running the script's ``__main__`` again in each of them (once per process).

    multiprocessing prepares a new process by re-running the main script as ``__mp_main__``, so a script
    without ``if __name__ == "__main__":`` would start a second call from every rank. Nothing of the main
    module is needed there: the function and its arguments travel by value (cloudpickle). So the ranks'
    preparation data leaves the main module out; only processes started by our agent thread are affected.
    """
    from multiprocessing import spawn

    original = spawn.get_preparation_data
    if getattr(original, "air_skips_main", False):
        return

    @functools.wraps(original)
    def get_preparation_data(name):
        data = original(name)
        if threading.current_thread().name == AGENT_THREAD:
            data.pop("init_main_from_path", None)
            data.pop("init_main_from_name", None)
        return data

    get_preparation_data.air_skips_main = True
    spawn.get_preparation_data = get_preparation_data


def _prepare_fork_server() -> None:
    import multiprocessing

    multiprocessing.get_context("forkserver").set_forkserver_preload(_FORKSERVER_PRELOAD)


def start_fork_server() -> None:
    """Start the fork server now, rather than at the first call: a new interpreter that preloads torch (this
    process imports nothing of torch here)."""
    from multiprocessing import forkserver

    _prepare_fork_server()
    forkserver.ensure_running()


@dataclass(frozen=True)
class NodePlace:
    """Where one node's ranks sit in a launch: node ``node_rank`` of ``nnodes``, ``nproc`` ranks on each.

    Node ``n`` holds the global ranks ``n * nproc`` to ``n * nproc + nproc - 1``. ``endpoint`` is node 0's
    rendezvous store (``host:port``, several nodes only); ``local_addr`` is this node's address.
    """

    nproc: int
    nnodes: int = 1
    node_rank: int = 0
    endpoint: str = ""
    local_addr: str = "127.0.0.1"
    run_id: str = field(default_factory=lambda: f"air-{uuid.uuid4().hex[:12]}")

    @property
    def world_size(self) -> int:
        return self.nnodes * self.nproc

    @property
    def ranks(self) -> range:
        return range(self.node_rank * self.nproc, (self.node_rank + 1) * self.nproc)


def launch_config(place: NodePlace, log_dir: pathlib.Path, start_method: str = START_METHOD):
    """The elastic launcher's settings for one node: its ranks, no restarts.

    One node: a rendezvous whose stores listen on loopback only. Several: torch's static rendezvous, whose
    store is node 0's, listening on node 0's address only (see :mod:`~jupyter_air.training.rendezvous`).
    """
    from torch.distributed.elastic.multiprocessing import DefaultLogsSpecs
    from torch.distributed.launcher.api import LaunchConfig

    from jupyter_air.training import rendezvous

    if start_method == "forkserver":
        _prepare_fork_server()
    _ranks_skip_the_main_module()
    if place.nnodes == 1:
        backend, endpoint, configs, address = rendezvous.register(), "", {}, rendezvous.LOOPBACK
    else:
        backend, endpoint, address = rendezvous.register_static(), place.endpoint, place.local_addr
        configs = {"rank": place.node_rank, "timeout": JOIN_TIMEOUT_SECONDS}
    return LaunchConfig(
        min_nodes=place.nnodes,
        max_nodes=place.nnodes,
        nproc_per_node=place.nproc,
        run_id=place.run_id,
        rdzv_backend=backend,
        rdzv_endpoint=endpoint,
        rdzv_configs=configs,
        local_addr=address,
        max_restarts=0,
        monitor_interval=0.05,
        start_method=start_method,
        logs_specs=DefaultLogsSpecs(log_dir=str(log_dir)),
    )


def pack(function, args: tuple, kwargs: dict) -> bytes:
    """The call's function and arguments as one pickle; raises DistributedError when they cannot travel."""
    try:
        return dumps({"function": function, "args": args, "kwargs": kwargs})
    except Exception as exc:
        raise DistributedError(
            f"cannot send the function or its arguments to the workers: {type(exc).__name__}: {exc}."
            " Pass picklable arguments (tensors, numbers, paths) and create open files, locks or"
            " connections inside the function."
        ) from exc


def call_context() -> dict:
    """What ranks need from the calling process: its import path, folder and notebook source lines."""
    return {"sys_path": list(sys.path), "cwd": os.getcwd(), "sources": notebook_sources()}


def interfaces_for(address: str) -> dict[str, str]:
    """The collective libraries' interface variables naming the network interface that holds ``address``."""
    import psutil

    for name, addresses in psutil.net_if_addrs().items():
        if any(a.address == address for a in addresses):
            return dict.fromkeys(_INTERFACE_VARIABLES, name)
    return {}


class Call:
    """One node's launch of a packed call (:func:`pack`): its ranks, their logs, results and errors."""

    def __init__(self, payload: bytes, context: dict, place: NodePlace, parent: pathlib.Path | None = None):
        self.place = place
        self.id = uuid.uuid4().hex
        self.tree = ProcessTree(marker={CALL_ID_ENV: self.id})
        self.folder = pathlib.Path(tempfile.mkdtemp(prefix="air-call-", dir=parent))
        for sub in ("logs", "pids", "results", "errors", "elastic"):
            (self.folder / sub).mkdir()
        for rank in place.ranks:
            self.log_path(rank).touch()  # every rank has a log artifact, even one that never started
        (self.folder / "context.json").write_text(json.dumps(context))
        (self.folder / "payload.pkl").write_bytes(payload)
        self._thread = threading.Thread(target=self._launch, name=AGENT_THREAD, daemon=True)
        # Waiting on an Event, not Thread.join(): a KeyboardInterrupt inside join() makes CPython
        # (before 3.13) mark the thread stopped while it still runs.
        self._done = threading.Event()
        self._failure: BaseException | None = None

    @classmethod
    def here(cls, function, args: tuple, kwargs: dict, world_size: int) -> Call:
        """Every rank on this node; fails before anything starts if the call cannot travel."""
        return cls(pack(function, args, kwargs), call_context(), NodePlace(world_size))

    @property
    def world_size(self) -> int:
        return self.place.world_size

    @property
    def nodes(self) -> int:
        return self.place.nnodes

    def log_path(self, rank: int) -> pathlib.Path:
        return self.folder / "logs" / f"rank_{rank}.log"

    def start(self) -> None:
        """Launch the ranks; each waits for :meth:`release` before running the function."""
        self._thread.start()

    def log_files(self) -> dict[str, dict[int, pathlib.Path]]:
        """``{artifact folder: {global rank: log file}}`` of every rank of the call."""
        return {f"logs/node_{self.place.node_rank}": {r: self.log_path(r) for r in self.place.ranks}}

    def release(self, overrides: dict[str, str]) -> None:
        """Let the ranks run with this process's environment plus ``overrides`` (and the launcher's rank variables)."""
        env = {**interfaces_for(self.place.local_addr), **os.environ, **overrides, CALL_ID_ENV: self.id}
        staging = self.folder / "env.json.tmp"
        staging.write_text(json.dumps(env))
        os.replace(staging, self.folder / "env.json")  # atomic: a rank never reads half of it

    def _launch(self) -> None:
        from torch.distributed.launcher.api import elastic_launch

        from jupyter_air.training.worker import run_rank

        try:  # each rank writes its result to a file: return values need not survive plain pickle
            elastic_launch(launch_config(self.place, self.folder / "elastic"), run_rank)(str(self.folder))
        except BaseException as exc:  # noqa: BLE001 - handed to the waiting thread, which raises it
            self._failure = exc
        finally:
            self._done.set()

    @property
    def running(self) -> bool:
        return self._thread.ident is not None and not self._done.is_set()

    def join(self, timeout: float) -> None:
        self._done.wait(timeout)

    def watch(self) -> None:
        """Record the ranks and their descendants now, so one whose parent dies first is still stopped."""
        for pid_file in (self.folder / "pids").glob("rank_*.pid"):
            try:
                pid, created = pid_file.read_text().split()
            except ValueError:
                continue  # being written
            if (int(pid), float(created)) not in self.tree.roots:
                self.tree.add_root(int(pid), float(created))
        self.tree.scan(by_marker=False)

    def stop(self) -> None:
        """Stop every process of the call (SIGTERM, then SIGKILL) and wait for the launcher to notice."""
        deadline = time.monotonic() + _STOP_DEADLINE_SECONDS
        while True:
            self.watch()
            self.tree.stop()
            if not self.running or time.monotonic() > deadline:
                return
            self._done.wait(0.1)  # a rank may have been forked after the scan

    def results(self) -> list:
        """Each rank's return value, indexed by global rank; raises DistributedError for a failed call."""
        import cloudpickle

        return [cloudpickle.loads(data) for _, data in sorted(self.result_bytes().items())]

    def result_bytes(self) -> dict[int, bytes]:
        """Each of this node's ranks' pickled return value; raises DistributedError for a failed call."""
        failure = self.failure_error()
        if failure is not None:
            raise failure from None
        values = {}
        for rank in self.place.ranks:
            path = self.folder / "results" / f"rank_{rank}.pkl"
            if not path.exists():
                raise DistributedError(f"rank {rank} ended without returning a result", rank=rank, node=self._node)
            values[rank] = path.read_bytes()
        return values

    @property
    def _node(self) -> int | None:
        return self.place.node_rank if self.place.nnodes > 1 else None

    def failure_error(self) -> DistributedError | None:
        """The DistributedError describing the first failed rank of this node, or None when none failed."""
        from torch.distributed.elastic.multiprocessing.errors import ChildFailedError

        exc = self._failure
        if exc is None:
            return None
        if not isinstance(exc, ChildFailedError):
            return DistributedError(f"the elastic launcher failed: {type(exc).__name__}: {exc}", node=self._node)
        failures = {rank: f"{describe_exit(f.exitcode)}" for rank, f in exc.failures.items()}
        rank, first = exc.get_first_failure()
        error_file = self.folder / "errors" / f"rank_{rank}.json"
        if error_file.exists():
            error = json.loads(error_file.read_text())
            summary = f"{error['exception_type']}: {error['exception_message']}"
            return DistributedError(
                f"rank {rank} failed ({describe_exit(first.exitcode)}): {summary}",
                rank=rank,
                node=self._node,
                exitcode=first.exitcode,
                exception_type=error["exception_type"],
                exception_message=error["exception_message"],
                worker_traceback=error["traceback"],
                failures=failures,
            )
        return DistributedError(
            f"rank {rank} {describe_exit(first.exitcode)} without raising a Python exception"
            f" (os._exit, a crash or a signal); its output is in logs/node_{self.place.node_rank}/rank_{rank}.log",
            rank=rank,
            node=self._node,
            exitcode=first.exitcode,
            failures=failures,
        )

    def cleanup(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)
