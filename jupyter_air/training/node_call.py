"""One node's share of a call: its folder, its ranks started by the fork server, their results and errors.

A :class:`Call` is every rank on one node, or (``NodePlace.nnodes > 1``) node ``node_rank``'s ranks of a
launch that other nodes' calls join through node 0's rendezvous store. The ranks run in processes of the fork
server (:mod:`~jupyter_air.training.forkserver_client`); this process never imports torch.
"""

from __future__ import annotations

import json
import os
import pathlib
import shutil
import uuid
from collections.abc import Sequence
from dataclasses import asdict

from jupyter_air import scratch
from jupyter_air.tracking.naming import call_logs_folder
from jupyter_air.training.errors import DistributedError, describe_exit
from jupyter_air.training.forkserver_client import Launcher
from jupyter_air.training.launch_plan import NodePlace, interfaces_for
from jupyter_air.training.outcome_file import read_outcome

#: Seconds to wait for the call's process to stop every process of the call.
_STOP_DEADLINE_SECONDS = 15.0
#: Environment variable every process of a call inherits (ranks' children and daemons included).
CALL_ID_ENV = "AIR_CALL_ID"
#: Environment variable naming a rank's expected parent, the call's process (ranks die with it).
PARENT_ENV = "AIR_CALL_PROCESS"


class Call:
    """One node's launch of a packed call (:func:`~jupyter_air.training.pickling.pack`): its ranks, their logs,
    results and errors.

    ``reserved_port``: node 0 of several, the rendezvous listener the fork server reserved for this launch.
    """

    def __init__(
        self,
        payload: bytes,
        context: dict,
        place: NodePlace,
        parent: pathlib.Path | None = None,
        reserved_port: int | None = None,
    ):
        self.place = place
        self.id = uuid.uuid4().hex
        self.folder = scratch.make("air-call-", parent)
        for sub in ("logs", "pids", "results", "errors", "elastic"):
            (self.folder / sub).mkdir()
        for rank in place.ranks:
            self.log_path(rank).touch()  # every rank has a log artifact, even one that never started
        (self.folder / "context.json").write_text(json.dumps(context))
        (self.folder / "payload.pkl").write_bytes(payload)
        self._reserved_port = reserved_port
        self._launcher: Launcher | None = None
        self._events = None

    #: Tags the call gives its run once started (a call on several nodes adds its shape; one node, none).
    tags: dict[str, str] = {}

    @property
    def world_size(self) -> int:
        return self.place.world_size

    @property
    def nodes(self) -> int:
        return self.place.nnodes

    def log_path(self, rank: int) -> pathlib.Path:
        return self.folder / "logs" / f"rank_{rank}.log"

    def start(self, note=lambda what: None) -> bool:
        """Launch the ranks in a process of the fork server; each waits for :meth:`release` before running. True:
        started (a call here holds its GPUs before it starts)."""
        self._launcher = Launcher.get()
        self._events = self._launcher.launch(self.id, self.folder, asdict(self.place), self._reserved_port)
        return True

    def sample_metrics(self, run, gpus: Sequence[str]) -> None:
        """Sample the system metrics of this node, where every rank runs, into ``run`` (a ManagedRun), with the
        energy of ``gpus``, the ranks' GPUs (none for CPU ranks), as a remote call's runner does."""
        run.start_system_metrics(gpus=list(gpus))

    def log_files(self) -> dict[str, dict[int, pathlib.Path]]:
        """``{artifact folder: {global rank: log file}}`` of every rank of the call."""
        return {call_logs_folder(self.place.node_rank): {r: self.log_path(r) for r in self.place.ranks}}

    def release(self, overrides: dict[str, str]) -> None:
        """Let the ranks run with this process's environment plus ``overrides`` (and the launcher's rank variables)."""
        env = {**interfaces_for(self.place.local_addr), **os.environ, **overrides, CALL_ID_ENV: self.id}
        staging = self.folder / "env.json.tmp"
        staging.write_text(json.dumps(env))
        os.replace(staging, self.folder / "env.json")  # atomic: a rank never reads half of it

    @property
    def running(self) -> bool:
        return self._events is not None and not self._events.ended.is_set()

    def join(self, timeout: float) -> None:
        if self._events is not None:
            self._events.ended.wait(timeout)

    def stop(self) -> None:
        """Stop every process of the call (SIGTERM, then SIGKILL) and wait until its process has ended."""
        if not self.running:
            return
        self._launcher.stop(self.id)
        self._events.ended.wait(_STOP_DEADLINE_SECONDS)

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
        if self.running:
            return None
        outcome = read_outcome(self.folder)
        if outcome is None:
            code = self._events.code if self._events is not None else None
            return DistributedError(
                f"the call's launcher process {describe_exit(code)} before it could say how the call ended",
                node=self._node,
            )
        if outcome["status"] == "ok":
            return None
        if outcome["status"] == "error":
            return DistributedError(f"the elastic launcher failed: {outcome['message']}", node=self._node)
        rank, exitcode = outcome["rank"], outcome["exitcode"]
        failures = {int(r): describe_exit(code) for r, code in outcome["failures"].items()}
        error_file = self.folder / "errors" / f"rank_{rank}.json"
        if error_file.exists():
            error = json.loads(error_file.read_text())
            summary = f"{error['exception_type']}: {error['exception_message']}"
            return DistributedError(
                f"rank {rank} failed ({describe_exit(exitcode)}): {summary}",
                rank=rank,
                node=self._node,
                exitcode=exitcode,
                exception_type=error["exception_type"],
                exception_message=error["exception_message"],
                worker_traceback=error["traceback"],
                failures=failures,
            )
        return DistributedError(
            f"rank {rank} {describe_exit(exitcode)} without raising a Python exception (os._exit, a crash or a "
            f"signal); its output is in {call_logs_folder(self.place.node_rank)}/rank_{rank}.log",
            rank=rank,
            node=self._node,
            exitcode=exitcode,
            failures=failures,
        )

    def cleanup(self) -> None:
        if self._launcher is not None:
            self._launcher.forget(self.id)
        shutil.rmtree(self.folder, ignore_errors=True)
