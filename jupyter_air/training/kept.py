"""The Ray nodes a notebook keeps between multi-node calls: the actors of the last finished call, for the next call
of the same shape (about 0.6 s instead of 5 s), freed after ``KEEP_SECONDS``, by ``release_nodes()``, or by the
GPU panel's Release (through :mod:`~jupyter_air.cluster.held`)."""

from __future__ import annotations

import logging
import threading
import time

from jupyter_air.cluster.held import Held
from jupyter_air.cluster.placement import NodeGroup, describe_bundle

#: Seconds the actors of a finished call are kept, holding their nodes' GPUs, for a next call of the same shape.
KEEP_SECONDS = 300.0
#: Seconds between two looks for a request (the GPU panel's Release) to free the kept nodes.
_RELEASE_CHECK_SECONDS = 1.0

log = logging.getLogger(__name__)


class Kept:
    """The actors of the last finished call, kept for ``KEEP_SECONDS`` for the next call of the same shape on the
    same connection; registered under AIR_HOME (:mod:`~jupyter_air.cluster.held`) so the GPU panel shows them and
    its Release frees them."""

    key: tuple | None = None
    group: NodeGroup | None = None
    held: Held | None = None
    stop: threading.Event | None = None
    lock = threading.Lock()

    @staticmethod
    def names(key: tuple) -> None:
        """A kernel's actors are its own: unnamed (see :class:`~jupyter_air.training.parked.Parked`)."""
        return None

    @classmethod
    def take(cls, key: tuple) -> NodeGroup | None:
        """The kept group if it has this shape; any other kept group is closed."""
        with cls.lock:
            group, cls.group = cls.group, None
            held, cls.held = cls.held, None
            if cls.stop is not None:
                cls.stop.set()
        if held is not None:
            held.close()
        if group is not None and (cls.key != key or group.closed):
            group.close()
            group = None
        return group

    @classmethod
    def keep(cls, key: tuple, group: NodeGroup, address: str) -> None:
        cls.take(key)
        try:
            held = Held([i.to_json() for i in group.infos], describe_bundle(group.share), address, KEEP_SECONDS)
        except OSError as exc:  # AIR_HOME unusable: the nodes are kept all the same, unlisted
            log.warning("The nodes kept for the next call are not listed in the GPU panel: %s", exc)
            held = None
        stop = threading.Event()
        with cls.lock:
            cls.key, cls.group, cls.held, cls.stop = key, group, held, stop
        threading.Thread(target=cls._watch, args=(group, held, stop), name="air-kept-nodes", daemon=True).start()

    @classmethod
    def _watch(cls, group: NodeGroup, held: Held | None, stop: threading.Event) -> None:
        """Free the group after ``KEEP_SECONDS`` or once its release is asked for, unless taken before."""
        deadline = time.monotonic() + KEEP_SECONDS
        while not stop.wait(min(_RELEASE_CHECK_SECONDS, max(0.0, deadline - time.monotonic()))):
            if time.monotonic() >= deadline or (held is not None and held.release_requested()):
                with cls.lock:
                    if cls.group is not group:
                        return
                    cls.group, cls.held = None, None
                if held is not None:
                    held.close()
                group.close()
                return


def release_nodes() -> None:
    """Free the nodes kept for the next multi-node call now (else after ``KEEP_SECONDS`` or when the kernel
    stops)."""
    Kept.take(())
