"""The base of every per-node actor: it marks what it starts, has it guarded, says where it runs, and speaks the
protocol of the one node-run driver (:mod:`~jupyter_air.cluster.node_run`)."""

from __future__ import annotations

import os
import socket
import tempfile
import threading
import time
import uuid
from pathlib import Path

from jupyter_air import procs

from . import guard
from .hosts import host_of

#: Environment variable every process an actor starts inherits (its forkserver, ranks, workload commands):
#: how the guard finds them all, daemons that left the session included.
AGENT_ENV = "AIR_AGENT_ID"
#: Most bytes of one file handed over by one read (a rank that prints a lot catches up over a few polls).
READ_LIMIT_BYTES = 1 << 20
#: Seconds between two looks at the work while a driver waits for it to end.
_WAIT_STEP_SECONDS = 1.0
#: Seconds between two looks of a parked actor at its deadline, and of a claimed one at its driver.
_PARKED_STEP_SECONDS = 1.0


class NodeAgent:
    """State every per-node actor shares; subclasses add what the actor does on its node.

    Made by :meth:`~jupyter_air.cluster.placement.NodeGroup.place` (or ``ray.remote`` for one node): the
    first argument is the actor's index in its group. A subclass that runs work for the driver adds ``start(...)``,
    ``poll(offsets) -> {"chunks": {name: bytes}, "running": bool, "failed": bool, ...}``, ``stop(grace_seconds)``,
    ``running()`` and ``join(timeout)``; :meth:`wait` and :meth:`reserve_port` are shared. One that runs a run's
    work also samples its node's metrics (:class:`~jupyter_air.tracking.node_metrics.NodeMetrics`).

    A detached actor (named, outliving its driver) is parked between drivers: :meth:`park` until :meth:`claim`
    (or from its start, with ``parked_seconds``: started ahead of its driver, see :mod:`.prestart`); unclaimed for
    its seconds, told to :meth:`expire`, or once the driver that claimed it is gone, it removes its placement group,
    which ends every actor of the group.
    """

    def __init__(self, index: int, parked_seconds: float | None = None):
        self.index = index
        self.agent_id = uuid.uuid4().hex
        self.folder = Path(tempfile.mkdtemp(prefix="air-agent-"))
        self.marker = {AGENT_ENV: self.agent_id}
        self._guard = guard.start(self.marker, self.folder)
        self._held: socket.socket | None = None
        raylet = guard.raylet_pid()
        self._raylet = (raylet, procs.start_time(raylet))
        os.environ.update(self.marker)  # inherited by every process started from now on
        self._parking = threading.Lock()
        self._parked: tuple[float, object] | None = None  # (deadline, placement group) while parked
        self._claim: object | None = None  # the claim of the driver that took it last, until parked again
        if parked_seconds is not None:
            from ray.util import get_current_placement_group

            self.park(parked_seconds, get_current_placement_group())

    def info(self) -> dict:
        """Where this actor runs (the fields of :class:`~jupyter_air.cluster.placement.NodeInfo`)."""
        import ray

        context = ray.get_runtime_context()
        ip = ray.util.get_node_ip_address()
        return {
            "index": self.index,
            "node_id": context.get_node_id(),
            "ip": ip,
            "hostname": socket.gethostname(),
            "host": host_of(context.get_node_labels(), ip),
            "pid": os.getpid(),
        }

    def ping(self) -> bool:
        """True while this node's raylet runs: an actor outlives a dead raylet by a few seconds (until its
        guard kills it), and its node is lost all the same."""
        return procs.is_alive(*self._raylet)

    def reserve_port(self, host: str) -> int:
        """Node 0: a port on ``host`` (this node's address) for the work's rendezvous, held bound here until
        :meth:`release_port` (just before the work that listens on it starts), so nothing else takes it."""
        self.release_port()
        self._held = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
        self._held.bind((host, 0))
        return self._held.getsockname()[1]

    def release_port(self) -> None:
        if self._held is not None:
            self._held.close()
            self._held = None

    def park(self, seconds: float, group) -> None:
        """Wait unclaimed for the next driver; after ``seconds`` free the nodes of ``group`` (its placement group)."""
        parked = (time.monotonic() + seconds, group)
        with self._parking:
            self._parked, self._claim = parked, None
        threading.Thread(target=self._expire_unclaimed, args=(parked,), name="air-parked", daemon=True).start()

    def claim(self, driver: str):
        """Take this parked actor for the driver of Ray job ``driver`` (its hex id): its group's placement group; None
        when it is not parked (another driver has it). Its nodes are freed once that driver is gone, unless it parked
        the actor again first, as a driver's own actors end with it."""
        with self._parking:
            parked, self._parked = self._parked, None
            if parked is None:
                return None
            self._claim = claim = object()
        threading.Thread(target=self._follow, args=(driver, claim, parked[1]), name="air-claimed", daemon=True).start()
        return parked[1]

    def expire(self) -> bool:
        """Free the group's nodes now if this actor is parked (its placement group removed: every actor of the
        group ends, this one included); False when a driver has claimed it."""
        with self._parking:
            parked, self._parked = self._parked, None
        if parked is None:
            return False
        from ray.util.placement_group import remove_placement_group

        remove_placement_group(parked[1])
        return True

    def _expire_unclaimed(self, parked: tuple) -> None:
        while True:
            time.sleep(_PARKED_STEP_SECONDS)
            with self._parking:
                if self._parked is not parked:
                    return
                due = time.monotonic() >= parked[0]
            if due:
                self.expire()
                return

    def _follow(self, driver: str, claim: object, group) -> None:
        while True:
            time.sleep(_PARKED_STEP_SECONDS)
            try:
                gone = not driver_alive(driver)
            except Exception:  # noqa: BLE001 - Ray's job table out of reach a moment: look again
                gone = False
            with self._parking:
                if self._claim is not claim:  # parked again: the next driver's now
                    return
            if gone:
                from ray.util.placement_group import remove_placement_group

                remove_placement_group(group)
                return

    def wait(self) -> bool:
        """Return once the work has ended: the pending answer by which the driver learns the node died."""
        while self.running():
            self.join(_WAIT_STEP_SECONDS)
        return True

    def running(self) -> bool:
        raise NotImplementedError

    def join(self, timeout: float) -> None:
        raise NotImplementedError


def driver_alive(driver: str) -> bool:
    """True while the driver of Ray job ``driver`` (hex id) is connected to the cluster (Ray's job table says so)."""
    from ray._private.worker import global_worker

    jobs = global_worker.gcs_client.get_all_job_info(
        job_or_submission_id=driver, skip_submission_job_info_field=True, skip_is_running_tasks_field=True
    )
    return any(not job.is_dead for job in jobs.values())


def read_from(path: Path, offset: int, limit: int = READ_LIMIT_BYTES) -> bytes:
    """Up to ``limit`` bytes of ``path`` after ``offset`` (nothing when the file does not exist yet)."""
    try:
        with open(path, "rb") as f:
            f.seek(offset)
            return f.read(limit)
    except FileNotFoundError:
        return b""
