"""Node actors parked on a Ray cluster for this user's next remote call: their names, freeing them, and their keeper,
a small process of this machine that lists them under AIR_HOME as held nodes (:mod:`.held`) while they wait, and
frees them when asked.

A remote call's supervisor leaves its node actors parked (detached, named, see
:meth:`~jupyter_air.cluster.agent.NodeAgent.park`) and starts a keeper: ``python -m jupyter_air.cluster.keeper SPEC``.
The keeper ends when the actors' parking time is over (they free their nodes themselves then), on ``SIGUSR1`` (the next
call took them: :func:`dismiss`), or frees them first on a release request (the GPU panel's Release) or ``SIGTERM``.
It imports Ray only to free them.
"""

from __future__ import annotations

import contextlib
import getpass
import json
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Collection

from jupyter_air.procs import is_alive

from .held import Held, holders

#: Ray namespace of the named, detached node actors parked between remote calls.
PARKED_NAMESPACE = "jupyter_air"
#: Seconds between two looks at a release request.
_LOOK_SECONDS = 1.0
#: Seconds the parked actors get to answer a request to free their nodes.
_FREE_SECONDS = 30.0

log = logging.getLogger(__name__)


def parked_prefix() -> str:
    """How the names of this user's parked node actors begin (the rest: the call's shape and the node)."""
    return f"air-parked-{getpass.getuser()}-"


def free_parked(keep: Collection[str] = ()) -> list:
    """Ask every node actor this user parked on the cluster this process joined (but those named in ``keep``) to
    free its nodes (one a call claimed meanwhile stays), and end their keepers; Ray's refs of the answers to come."""
    import ray

    names, asked = [], []
    try:
        for found in ray.util.list_named_actors(all_namespaces=True):
            name = found.get("name", "")
            if found.get("namespace") == PARKED_NAMESPACE and name.startswith(parked_prefix()) and name not in keep:
                names.append(name)
        asked = _expire(ray, names)
    except Exception as exc:  # noqa: BLE001 - a Ray that cannot list or reach them: they free their nodes by
        log.debug("parked node actors not freed: %s", exc)  # themselves in minutes anyway
    if names:
        dismiss(names)
    return asked


def _expire(ray, names: Collection[str]) -> list:
    """Ask the parked actors ``names`` to free their nodes; Ray's refs of their answers (none for one gone)."""
    asked = []
    for name in names:
        with contextlib.suppress(ValueError):  # gone already
            asked.append(ray.get_actor(name, namespace=PARKED_NAMESPACE).expire.remote())
    return asked


def start(address: str, names: list[str], nodes: list[dict], share: str, seconds: float) -> None:
    """Start the keeper of the parked actors ``names`` (detached: it outlives the caller)."""
    spec = {"address": address, "names": names, "nodes": nodes, "share": share, "seconds": seconds}
    subprocess.Popen(
        [sys.executable, "-m", __name__, json.dumps(spec)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )


def dismiss(names: Collection[str]) -> None:
    """End the keepers of any of ``names`` without freeing them: a call has just taken them, or freed them."""
    for record in holders():
        if set(record.get("names") or ()) & set(names) and is_alive(record["pid"], record.get("started")):
            with contextlib.suppress(ProcessLookupError):
                os.kill(record["pid"], signal.SIGUSR1)


def free(address: str, names: list[str]) -> None:
    """Free the parked actors ``names`` on the cluster at ``address`` (those a call has taken meanwhile stay)."""
    from .connect import connect, ray_module

    ray = ray_module()
    connect(address)
    with contextlib.suppress(ray.exceptions.RayError):  # an actor ends while it answers: freed all the same
        ray.get(_expire(ray, names), timeout=_FREE_SECONDS)


def main(argv: list[str]) -> None:
    spec = json.loads(argv[0])
    ending = threading.Event()
    freeing = threading.Event()
    signal.signal(signal.SIGUSR1, lambda signum, frame: ending.set())
    signal.signal(signal.SIGTERM, lambda signum, frame: (freeing.set(), ending.set()))
    held = Held(spec["nodes"], spec["share"], spec["address"], spec["seconds"], names=spec["names"])
    deadline = time.monotonic() + spec["seconds"]
    try:
        while not ending.wait(_LOOK_SECONDS) and time.monotonic() < deadline:
            if held.release_requested():
                freeing.set()
                break
        if freeing.is_set():
            free(spec["address"], spec["names"])
    finally:
        held.close()


if __name__ == "__main__":
    main(sys.argv[1:])
