"""The actor of one node in a multi-node call: that node's share of the launch, run with :class:`Call`."""

from __future__ import annotations

import os
import sys

from jupyter_air.cluster.agent import NodeAgent, read_from
from jupyter_air.tracking.node_metrics import NodeMetrics
from jupyter_air.training.forkserver_client import Launcher
from jupyter_air.training.launch_plan import NodePlace
from jupyter_air.training.node_call import Call


def localized(context: dict) -> dict:
    """The calling process's context made usable on this node: its folder and import path where they exist here.

    The notebook's folder may not exist on another host; ranks then start in this actor's folder. Its import
    path keeps the entries that exist here, followed by this node's own.
    """
    cwd = context["cwd"] if os.path.isdir(context["cwd"]) else os.getcwd()
    kept = [p for p in context["sys_path"] if p == "" or os.path.exists(p)]
    return {**context, "cwd": cwd, "sys_path": kept + [p for p in sys.path if p not in kept]}


class TrainingAgent(NodeMetrics, NodeAgent):
    """Runs this node's ranks of one call at a time; kept between calls of the same shape (the fork server too)."""

    def __init__(self, index: int):
        super().__init__(index)
        Launcher.get()  # the fork server imports torch while the driver creates the run
        self.call: Call | None = None
        self._port: int | None = None

    def reserve_port(self, host: str) -> int:
        """Node 0: open the next call's rendezvous listener on ``host`` (this node's address) in the fork server,
        which hands it to the call's store; its port."""
        self._port = Launcher.get().reserve(host)
        return self._port

    def start(self, payload: bytes, context: dict, place: NodePlace) -> None:
        """Start this node's ranks; each waits for :meth:`release`."""
        self._forget_call()
        port, self._port = (self._port, None) if place.node_rank == 0 else (None, self._port)
        self.call = Call(payload, localized(context), place, parent=self.folder, reserved_port=port)
        self.call.start()

    def release(self, overrides: dict[str, str]) -> None:
        """Let the ranks run with this node's environment plus ``overrides``."""
        self.call.release(overrides)

    def poll(self, offsets: dict[int, int]) -> dict:
        """New bytes of each rank's log after ``offsets``, and whether the launcher still runs."""
        call = self.call
        chunks = {rank: read_from(call.log_path(rank), offsets.get(rank, 0)) for rank in call.place.ranks}
        return {"chunks": chunks, "running": call.running, "failed": call.failure_error() is not None}

    def running(self) -> bool:
        return self.call is not None and self.call.running

    def join(self, timeout: float) -> None:
        self.call.join(timeout)

    def outcome(self) -> dict:
        """``{"results": {rank: pickled value}}``, or ``{"failure": DistributedError, "times": {rank: when}}``
        (when each failed rank wrote its error: which node failed first). Takes the last metrics sample first."""
        self.stop_metrics()
        failure = self.call.failure_error()
        if failure is None:
            return {"results": self.call.result_bytes()}
        errors = self.call.folder / "errors"
        times = {int(p.stem.split("_")[1]): p.stat().st_mtime for p in errors.glob("rank_*.json")}
        return {"failure": failure, "times": times}

    def stop(self, grace_seconds: float) -> bool:
        """Stop every process of the call (SIGTERM, then SIGKILL after the call process's own grace, which
        ``grace_seconds`` does not shorten); True once the launcher has ended."""
        if self.call is not None:
            self.call.stop()
        self.stop_metrics()
        return self.call is None or not self.call.running

    def cleanup(self) -> None:
        """Forget the last call: its folder, its unused rendezvous listener."""
        self._forget_call()
        if self._port is not None:
            Launcher.get().unreserve(self._port)
            self._port = None

    def _forget_call(self) -> None:
        self.stop_metrics()
        if self.call is not None:
            self.call.cleanup()
            self.call = None
