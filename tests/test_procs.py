"""Waiting for a process that is not this one's child to end: told by the kernel (a pidfd), or, on a kernel without
pidfds, by looking."""

from __future__ import annotations

import os
import signal
import subprocess
import threading

import pytest

from jupyter_air import procs


def _no_pidfd(pid: int) -> int:
    raise OSError(38, "Function not implemented")


@pytest.mark.parametrize("pidfd", [True, False], ids=["pidfd", "older-kernel"])
def test_wait_gone_returns_once_a_process_that_is_no_child_ends(monkeypatch, pidfd):
    if not pidfd:
        monkeypatch.setattr(os, "pidfd_open", _no_pidfd)
    # Given a process started by a shell that exits at once (so it is no child of this one)
    shell = "sleep 60 > /dev/null 2>&1 & echo $!"
    pid = int(subprocess.run(["sh", "-c", shell], capture_output=True, text=True, check=True).stdout)
    started = procs.start_time(pid)
    waited = threading.Thread(target=procs.wait_gone, args=(pid, started), daemon=True)
    # When it is waited for, while it runs
    waited.start()
    waited.join(0.5)
    # Then the wait goes on; and it returns once the process ended
    assert waited.is_alive()
    os.kill(pid, signal.SIGTERM)
    waited.join(10)
    assert not waited.is_alive()


def test_wait_gone_returns_at_once_for_a_process_that_ended_or_a_reused_pid():
    procs.wait_gone(2**22 + 1, None)  # no such PID
    procs.wait_gone(os.getpid(), 1.0)  # this PID, but started at another time: not the process waited for
