"""A caller's fork server and what runs below it: the processes of its calls, without the resident MLflow server the
caller may have started (it outlives the caller by design)."""

from __future__ import annotations

import pathlib

import psutil


def command_line(pid: int) -> list[str]:
    """The process's command line; empty once it has ended."""
    try:
        return psutil.Process(pid).cmdline()
    except psutil.Error:
        return []


def fork_server_tree(caller: int) -> tuple[pathlib.Path, list[int]]:
    """The folder of the caller's fork server's log (its last argument), and the PIDs of the fork server and of
    every process below it."""
    children = psutil.Process(caller).children()
    (server,) = [p for p in children if "air-launcher-" in "".join(command_line(p.pid)[-1:])]
    return pathlib.Path(server.cmdline()[-1]), [server.pid, *(p.pid for p in server.children(recursive=True))]
