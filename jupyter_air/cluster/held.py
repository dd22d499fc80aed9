"""Ray nodes a notebook keeps for its next multi-node call: registered under ``AIR_HOME/held-nodes/`` so the Jupyter
server lists them (who holds which nodes, since when) and asks for their release, and a job waiting for nodes
names who holds them and how to free them.

The kernel writes ``<pid>.json`` while it keeps nodes; the server writes ``<pid>.release`` to ask it to let them go
(the kernel looks for it every second, busy or not). Files are owner-only, like everything in AIR_HOME; a
registration whose process is gone is ignored and removed.
"""

from __future__ import annotations

import json
import logging
import os
import pathlib
import time

from jupyter_air.home import air_home, air_home_path, open_private, private_dir, private_file
from jupyter_air.procs import is_alive, start_time

_FOLDER = "held-nodes"

log = logging.getLogger(__name__)


def _folder(home: pathlib.Path | None, create: bool = True) -> pathlib.Path:
    if create:
        return private_dir((home or air_home()) / _FOLDER)
    return (home or air_home_path()) / _FOLDER


class Held:
    """This process's registration of the nodes it keeps; :meth:`close` once it lets them go."""

    def __init__(self, nodes: list[dict], share: str, address: str, keep_seconds: float, home=None, names=None):
        folder = _folder(home)
        pid = os.getpid()
        self.path = folder / f"{pid}.json"
        self.flag = folder / f"{pid}.release"
        self.flag.unlink(missing_ok=True)  # a request about nodes this process no longer keeps
        now_ms = int(time.time() * 1000)
        record = {
            "pid": pid,
            "started": start_time(pid),
            "notebook": os.environ.get("JPY_SESSION_NAME") or None,
            "address": address,
            "share": share,
            "nodes": nodes,
            "since_ms": now_ms,
            "until_ms": now_ms + int(keep_seconds * 1000),
            **({"names": names} if names else {}),  # the parked actors a keeper process lists
        }
        staging = folder / f"{pid}.json.tmp"
        staging.unlink(missing_ok=True)
        with open_private(staging, "w") as file:  # 0600 from the start, then in place at once
            file.write(json.dumps(record))
        os.replace(staging, self.path)

    def release_requested(self) -> bool:
        """True once someone asked for these nodes (one ``stat``)."""
        return self.flag.exists()

    def close(self) -> None:
        for path in (self.path, self.flag):
            path.unlink(missing_ok=True)


def holders(home: pathlib.Path | None = None) -> list[dict]:
    """Every live registration (``pid``, ``notebook``, ``address``, ``share``, ``nodes``, ``since_ms``,
    ``until_ms``), oldest first; those of processes that are gone are removed."""
    folder = _folder(home, create=False)
    found = []
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        record = _record(path)
        if record is None:
            continue
        if not is_alive(record["pid"], record.get("started")):
            for leftover in (path, path.with_suffix(".release")):
                leftover.unlink(missing_ok=True)
            continue
        found.append(record)
    return sorted(found, key=lambda r: r.get("since_ms", 0))


def request_release(pid: int, home: pathlib.Path | None = None) -> bool:
    """Ask process ``pid`` to free the nodes it keeps; False when it keeps none (or is gone)."""
    folder = _folder(home, create=False)
    record = _record(folder / f"{int(pid)}.json")
    if record is None or not is_alive(record["pid"], record.get("started")):
        return False
    private_file(folder / f"{int(pid)}.release")
    return True


def waiting_hint(home: pathlib.Path | None = None) -> str:
    """What a job waiting for Ray nodes should say about notebooks keeping nodes: who, which, since when, until
    when, and how to free them; empty when no notebook keeps any."""
    try:
        found = holders(home)
    except OSError as exc:  # AIR_HOME unreadable: the wait goes on without the hint
        log.debug("held nodes not read: %s", exc)
        return ""
    parts = []
    for record in found:
        if record.get("names"):
            who, how = f"remote calls' keeper (process {record['pid']})", f"free them with `kill {record['pid']}`"
        else:
            who = f"notebook {record['notebook']}" if record.get("notebook") else "a Python process"
            who += f" (process {record['pid']})"
            how = "free them with `release_nodes()` in that notebook, or by shutting down its kernel"
        names = ", ".join(n.get("hostname") or n.get("ip") or "?" for n in record.get("nodes", []))
        parts.append(
            f"{who} keeps {len(record.get('nodes', []))} node(s) ({names}) since {_clock(record.get('since_ms'))} "
            f"for its next call, until {_clock(record.get('until_ms'))}: {how}"
        )
    return "; held: " + "; ".join(parts) if parts else ""


def _clock(ms: int | None) -> str:
    return time.strftime("%H:%M:%S", time.localtime(ms / 1000)) if ms else "?"


def _record(path: pathlib.Path) -> dict | None:
    try:
        record = json.loads(path.read_text())
    except (FileNotFoundError, ValueError, OSError):
        return None
    return record if isinstance(record, dict) and isinstance(record.get("pid"), int) else None
