"""Process trees: liveness that survives PID reuse, and stopping every process a call or a job started.

A tree is found three ways, since each misses something: the descendants of its root processes (while
they live), every process of this user whose environment carries the tree's marker (exec'd descendants
inherit it, even daemons that left the session and were re-parented to init), and the members of the
roots' sessions and process groups. Processes seen once are remembered, so one whose parent died
first is still stopped.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import time
from collections.abc import Iterable, Mapping

import psutil

#: Seconds between SIGTERM and SIGKILL: time for a training script to save a checkpoint and exit.
TERM_GRACE_SECONDS = 5.0
#: Two start times of one PID further apart than this are two processes (PID reuse). Not less: each
#: process computes start times from its own reading of the boot time, which can differ by a second.
_SAME_START_SECONDS = 1.0
#: Seconds between two looks at a process that is waited for where the kernel cannot say when it ends (no pidfd).
_GONE_POLL_SECONDS = 0.5
#: Rounds of "find what is left, SIGKILL it" after the grace period.
_KILL_ROUNDS = 10

#: The name of a process that works for another one: ``airfork-<pid>`` (at most 15 characters with any PID).
_WORKS_FOR = "airfork-"

Root = tuple[int, "float | None"]


def start_time(pid: int) -> float | None:
    """The process's start time (seconds since the epoch), or None when it does not exist."""
    try:
        return psutil.Process(pid).create_time()
    except psutil.Error:
        return None


def is_alive(pid: int | None, started: float | None) -> bool:
    """True when ``pid`` still runs and is the process started at ``started`` (not a reused PID or a zombie)."""
    if not pid:
        return False
    try:
        proc = psutil.Process(pid)
        if started is not None and abs(proc.create_time() - started) > _SAME_START_SECONDS:
            return False
        return proc.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def wait_gone(pid: int, started: float | None) -> None:
    """Return once the process ``pid`` started at ``started`` has ended (a zombie has), any process, not only a child:
    the kernel says when through a pidfd (Linux 5.3), else it is looked at every half second. Signals are handled
    meanwhile."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return
    except OSError:  # an older kernel
        while is_alive(pid, started):
            time.sleep(_GONE_POLL_SECONDS)
        return
    try:
        if is_alive(pid, started):  # the pidfd is of that process, not of a later one with its PID
            waiting = select.poll()  # not select(): a supervisor of many nodes may hold descriptors past 1024
            waiting.register(fd, select.POLLIN)
            waiting.poll()
    finally:
        os.close(fd)


def _carries(proc: psutil.Process, marker: Mapping[str, str]) -> bool:
    try:
        env = proc.environ()
    except (psutil.Error, OSError):
        return False  # another user's process, or gone
    return all(env.get(key) == value for key, value in marker.items())


class ProcessTree:
    """Every process started under ``roots`` (``(pid, start time)`` pairs) or carrying ``marker`` in its environment.

    ``below``: also every descendant of that process (not itself), looked up afresh at each scan: for a subreaper,
    the orphans it adopted since included.
    """

    def __init__(self, roots: Iterable[Root] = (), marker: Mapping[str, str] | None = None, below: int | None = None):
        self.roots = list(roots)
        self.marker = dict(marker or {})
        self.below = below
        self._seen: dict[int, psutil.Process] = {}

    def add_root(self, pid: int, started: float | None) -> None:
        self.roots.append((pid, started))

    def scan(self, by_marker: bool = True) -> list[psutil.Process]:
        """Record and return the live processes of the tree (this process excluded).

        ``by_marker=False`` only follows the roots' descendants: cheap enough to call every second.
        """
        me = os.getpid()
        sessions = set()
        if self.below is not None:
            with contextlib.suppress(psutil.Error):
                for child in psutil.Process(self.below).children(recursive=True):
                    self._remember(child)
        for pid, started in self.roots:
            if not is_alive(pid, started):
                continue
            try:
                root = psutil.Process(pid)
                self._remember(root)
                for child in root.children(recursive=True):
                    self._remember(child)
                if os.getsid(pid) == pid:
                    sessions.add(pid)
            except (psutil.Error, OSError):
                continue
        if (by_marker and self.marker) or sessions:
            earliest = min((s for _, s in self.roots if s is not None), default=None)
            for proc in psutil.process_iter():
                if proc.pid == me or proc.pid in self._seen:
                    continue
                if (by_marker and self.marker and _carries(proc, self.marker)) or _in_session(proc, sessions, earliest):
                    self._remember(proc)
        return self.alive()

    def alive(self) -> list[psutil.Process]:
        """The remembered processes that still run (a PID since reused by another process is dropped)."""
        live = []
        for pid, proc in list(self._seen.items()):
            try:
                if proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE:
                    live.append(proc)
                    continue
            except psutil.Error:
                pass
            del self._seen[pid]
        return live

    def stop(self, grace_seconds: float = TERM_GRACE_SECONDS) -> dict[int, int]:
        """SIGTERM the whole tree, SIGKILL whatever is left after ``grace_seconds``, rescanning until none is left.

        Returns the exit status of each process this call reaped (children of this process), keyed by
        PID, since the caller can no longer read it from ``subprocess.Popen`` afterwards.
        """
        procs = self.scan()
        for proc in procs:
            _signal(proc, signal.SIGTERM)
        gone, _ = psutil.wait_procs(procs, timeout=grace_seconds)
        codes = {p.pid: p.returncode for p in gone if p.returncode is not None}
        for _ in range(_KILL_ROUNDS):
            left = self.scan()
            if not left:
                break
            for proc in left:
                _signal(proc, signal.SIGKILL)
            killed, _ = psutil.wait_procs(left, timeout=1.0)
            codes.update({p.pid: p.returncode for p in killed if p.returncode is not None})
        return codes

    def _remember(self, proc: psutil.Process) -> None:
        self._seen.setdefault(proc.pid, proc)


def _in_session(proc: psutil.Process, sessions: set[int], earliest: float | None) -> bool:
    """True for a member of one of ``sessions`` (or their process groups) started after the roots."""
    if not sessions:
        return False
    try:
        member = os.getsid(proc.pid) in sessions or os.getpgid(proc.pid) in sessions
        return member and (earliest is None or proc.create_time() >= earliest - _SAME_START_SECONDS)
    except (OSError, psutil.Error):
        return False


def stop_tree(
    pid: int, started: float | None, grace_seconds: float = TERM_GRACE_SECONDS, marker: Mapping[str, str] | None = None
) -> dict[int, int]:
    """Stop the process ``pid`` (a session leader), everything under it and everything carrying ``marker``."""
    return ProcessTree([(pid, started)], marker).stop(grace_seconds)


def _signal(proc: psutil.Process, sig: int) -> None:
    with contextlib.suppress(psutil.Error):
        proc.send_signal(sig)


def _prctl(option: int, value: int | bytes) -> bool:
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(option, ctypes.c_char_p(value) if isinstance(value, bytes) else value, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def set_name(name: str) -> None:
    """Name this process (Linux's ``comm``, what ``ps`` and the GPU panel show; 15 bytes at most)."""
    _prctl(15, name.encode()[:15])  # PR_SET_NAME


def work_for(owner: int) -> None:
    """Name this process after ``owner``, the process it works for without descending from it (a kernel's fork
    server forked by AIR_HOME's zygote), so :func:`parent_of` leads from it to ``owner``."""
    set_name(f"{_WORKS_FOR}{owner}")


def parent_of(pid: int) -> int:
    """The process ``pid`` works for: the one it was named after by :func:`work_for` when it is a process of this
    user, else its parent. Raises psutil.Error when it is gone."""
    proc = psutil.Process(pid)
    name = proc.name()
    if name.startswith(_WORKS_FOR) and name[len(_WORKS_FOR) :].isdigit() and proc.uids().real == os.getuid():
        return int(name[len(_WORKS_FOR) :])
    return proc.ppid()


def become_subreaper() -> bool:
    """Make orphaned descendants of this process its children rather than init's (Linux); False elsewhere."""
    return _prctl(36, 1)  # PR_SET_CHILD_SUBREAPER


def die_with_parent(parent: int, sig: int = signal.SIGTERM) -> None:
    """Have the kernel send ``sig`` to this process when the thread that forked it ends (Linux); exits at once when
    ``parent`` is already gone (this process was re-parented before the request took effect)."""
    _prctl(1, int(sig))  # PR_SET_PDEATHSIG
    if os.getppid() != parent:
        os._exit(1)
