"""``python -m jupyter_air.cluster.guard ...``: stops what a node's actor started once the actor or its raylet is gone.

Ray kills an actor's own process group, but a rank or a workload command in a session of its own escapes
it; and when a node's raylet dies its workers run on for tens of seconds, their children forever. The guard
runs in a session of its own, looks at the actor and the raylet every half second, and once either is gone
stops every process that carries the actor's marker (:class:`~jupyter_air.procs.ProcessTree`), kills the
actor if it is still there, deletes the actor's folder and exits.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path

from jupyter_air import procs

#: Seconds between two looks at the actor and its raylet.
POLL_SECONDS = 0.5
#: Environment variable naming the guard's actor: how tests and leftover checks find guards.
GUARD_ENV = "AIR_AGENT_GUARD"


def raylet_pid() -> int:
    """The PID of this actor's raylet: ``RAY_RAYLET_PID``, else this process's parent."""
    return int(os.environ.get("RAY_RAYLET_PID") or os.getppid())


def start(marker: Mapping[str, str], folder: Path) -> subprocess.Popen:
    """Start the guard of this process (a Ray actor) and of ``RAY_RAYLET_PID`` (else this process's parent)."""
    raylet = raylet_pid()
    me = os.getpid()
    ((key, value),) = marker.items()
    env = {k: v for k, v in os.environ.items() if k not in marker}
    argv = [str(me), repr(procs.start_time(me)), str(raylet), repr(procs.start_time(raylet)), f"{key}={value}"]
    return subprocess.Popen(
        [sys.executable, "-m", "jupyter_air.cluster.guard", *argv, str(folder)],
        env={**env, GUARD_ENV: value},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,  # out of the actor's process group, which Ray kills with the actor
    )


def watch(actor: tuple[int, float | None], raylet: tuple[int, float | None], marker: dict[str, str], folder: Path):
    """Wait until the actor or the raylet is gone, then stop everything the actor started."""
    while procs.is_alive(*actor) and procs.is_alive(*raylet):
        time.sleep(POLL_SECONDS)
    node_lost = not procs.is_alive(*raylet)
    procs.ProcessTree(marker=marker).stop(grace_seconds=0.5 if node_lost else 2.0)
    if procs.is_alive(*actor):  # its raylet is gone: nobody will ever call it again
        with contextlib.suppress(ProcessLookupError):
            os.kill(actor[0], signal.SIGKILL)
    shutil.rmtree(folder, ignore_errors=True)


def _started(text: str) -> float | None:
    return None if text == "None" else float(text)


def main(argv: list[str]) -> None:
    actor_pid, actor_started, raylet_pid, raylet_started, marker, folder = argv
    key, _, value = marker.partition("=")
    watch(
        (int(actor_pid), _started(actor_started)),
        (int(raylet_pid), _started(raylet_started)),
        {key: value},
        Path(folder),
    )


if __name__ == "__main__":
    main(sys.argv[1:])
