"""This user's processes under one AIR_HOME that ran ``.distributed()`` calls, and the ranks of those running now:
the users of the simulated GPUs (:mod:`~jupyter_air.gpu.simulated`). Those of another AIR_HOME (another server's
kernels) use that server's simulated GPUs, not these.

Read from ``/proc`` (Linux; elsewhere there are none), as NVML reads a GPU's processes from the driver. A process
that runs calls (a kernel, a script) has a fork server: named ``airfork-<owner pid>`` when AIR_HOME's zygote forked it
(a kernel's), else started by its owner with ``jupyter_air.training.forkserver`` on its command line. It has run a
call when it has a call process now, or had one: Linux adds the CPU time of an ended child to its parent's (``cutime``,
``cstime``). The children of its call processes are the call's ranks. Its AIR_HOME is the one in the environment it
started with (a zygote's fork server: the zygote's, started for that AIR_HOME).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import psutil

from jupyter_air import procs
from jupyter_air.home import air_home_path

#: What the command line of a fork server that its owner started itself names.
FORK_SERVER_MODULE = "jupyter_air.training.forkserver"
#: The name AIR_HOME's zygote gives the fork servers it forks (:func:`jupyter_air.procs.work_for`).
ZYGOTE_FORK_PREFIX = "airfork-"


@dataclass(frozen=True)
class Caller:
    """A process that ran ``.distributed()`` calls, and the ranks of its calls running now (pid, name), oldest first."""

    pid: int
    name: str | None
    ranks: tuple[tuple[int, str | None], ...] = ()


class _Stat(NamedTuple):
    """What ``/proc/<pid>/stat`` says of a process."""

    pid: int
    name: str
    ppid: int
    reaped: bool  # an ended child's CPU time is counted in it
    started: int  # clock ticks after boot


def find(home: Path | None = None) -> list[Caller]:
    """Every process of this user under AIR_HOME ``home`` (default: this process's) that ran a ``.distributed()``
    call, with its running ranks: one read of each process's ``stat`` (a few milliseconds for a few hundred
    processes), then the command line and environment of the few that have or had children."""
    home, table = home or air_home_path(), _table()
    children: dict[int, list[_Stat]] = {}
    for stat in table.values():
        children.setdefault(stat.ppid, []).append(stat)
    callers = []
    for stat in table.values():
        try:
            caller = _caller(stat, table, children, home)
        except (psutil.Error, OSError):  # ended meanwhile
            continue
        if caller is not None:
            callers.append(caller)
    return sorted(callers, key=lambda c: c.pid)


def _caller(server: _Stat, table: dict[int, _Stat], children: dict[int, list[_Stat]], home: Path) -> Caller | None:
    """The owner of ``server`` when it is a fork server of AIR_HOME ``home`` that has run a call, else None."""
    calls = children.get(server.pid, [])
    if not calls and not server.reaped:
        return None  # no call runs, none ran
    parent = table.get(server.ppid)
    if not _looks_like_fork_server(server) or (parent is not None and _looks_like_fork_server(parent)):
        return None  # the call processes and ranks a fork server forks keep its command line (or name, at first)
    if _home_of(server.pid) != home:
        return None
    ranks = sorted((rank for call in calls for rank in children.get(call.pid, [])), key=lambda r: (r.started, r.pid))
    owner = psutil.Process(procs.parent_of(server.pid))
    return Caller(owner.pid, owner.name(), tuple((rank.pid, rank.name) for rank in ranks))


def _looks_like_fork_server(stat: _Stat) -> bool:
    if stat.name.startswith(ZYGOTE_FORK_PREFIX) and stat.name[len(ZYGOTE_FORK_PREFIX) :].isdigit():
        return True
    try:
        with open(f"/proc/{stat.pid}/cmdline", "rb") as f:
            return FORK_SERVER_MODULE.encode() in f.read()
    except OSError:
        return False


def _home_of(pid: int) -> Path | None:
    """The AIR_HOME of the environment process ``pid`` started with, None when it cannot be read."""
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            items = f.read().split(b"\0")
    except OSError:
        return None
    return air_home_path(dict(item.decode(errors="replace").partition("=")[::2] for item in items if item))


def _table() -> dict[int, _Stat]:
    """This user's live processes (no zombies), by pid."""
    me, table = os.getuid(), {}
    try:
        pids = [int(entry) for entry in os.listdir("/proc") if entry.isdigit()]
    except OSError:
        return {}
    for pid in pids:
        try:
            if os.stat(f"/proc/{pid}").st_uid != me:
                continue
            with open(f"/proc/{pid}/stat", "rb") as f:
                data = f.read()
        except OSError:  # gone
            continue
        end = data.rindex(b")")
        fields = data[end + 2 :].split()  # from the state on: field 3 of proc(5)
        if fields[0] == b"Z":
            continue
        name = data[data.index(b"(") + 1 : end].decode(errors="replace")
        table[pid] = _Stat(pid, name, int(fields[1]), int(fields[13]) + int(fields[14]) > 0, int(fields[19]))
    return table
