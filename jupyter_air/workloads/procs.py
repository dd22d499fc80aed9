"""Process helpers: liveness that survives PID reuse, and stopping a whole process tree."""

from __future__ import annotations

import os
import signal
from typing import Optional

import psutil

#: Seconds between SIGTERM and SIGKILL when stopping a workload.
TERM_GRACE_SECONDS = 5.0


def start_time(pid: int) -> Optional[float]:
    """The process's start time (seconds since the epoch), or None when it does not exist."""
    try:
        return psutil.Process(pid).create_time()
    except psutil.Error:
        return None


def is_alive(pid: Optional[int], started: Optional[float]) -> bool:
    """True when `pid` still runs and is the process started at `started` (not a reused PID or a zombie)."""
    if not pid:
        return False
    try:
        proc = psutil.Process(pid)
        if started is not None and abs(proc.create_time() - started) > 1.0:
            return False
        return proc.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def tree(pid: int, started: Optional[float]) -> list[psutil.Process]:
    """The process `pid` (a session leader), its descendants, and what is left of its session and group."""
    found: dict[int, psutil.Process] = {}
    if is_alive(pid, started):
        leader = psutil.Process(pid)
        found[pid] = leader
        for child in leader.children(recursive=True):
            found[child.pid] = child
    for proc in psutil.process_iter():
        if proc.pid in found or proc.pid == os.getpid():
            continue
        try:
            same = os.getsid(proc.pid) == pid or os.getpgid(proc.pid) == pid
            if same and (started is None or proc.create_time() >= started - 1.0):
                found[proc.pid] = proc
        except (OSError, psutil.Error):
            continue
    return list(found.values())


def stop_tree(pid: int, started: Optional[float], grace_seconds: float = TERM_GRACE_SECONDS) -> dict[int, int]:
    """SIGTERM the tree of `pid`, SIGKILL whatever is left after `grace_seconds`.

    Returns the exit status of each process this call reaped (our own children), keyed by PID, since
    the caller can no longer read it from `subprocess.Popen` afterwards.
    """
    procs = tree(pid, started)
    for proc in procs:
        _signal(proc, signal.SIGTERM)
    gone, alive = psutil.wait_procs(procs, timeout=grace_seconds)
    for proc in alive + [p for p in tree(pid, started) if p not in procs]:
        _signal(proc, signal.SIGKILL)
    killed, _ = psutil.wait_procs(alive, timeout=2)
    return {p.pid: p.returncode for p in gone + killed if p.returncode is not None}


def _signal(proc: psutil.Process, sig: int) -> None:
    try:
        proc.send_signal(sig)
    except psutil.Error:
        pass
