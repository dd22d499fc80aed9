"""Private temporary folders that belong to a process: owner-only, with the owner's PID and start time inside, and
removed by a later process of the same user once the owner is gone.

A call's folder (``air-call-*``: its payload, results and rank logs) and a fork server's (``air-launcher-*``: its log)
are removed as their call or fork server ends; :func:`sweep` removes those whose owner could not (killed with SIGKILL,
or by the out-of-memory killer): the next fork server of the user, and a job's supervisor once its command's
processes are stopped. AIR_HOME's MLflow server records itself the same way
(:mod:`~jupyter_air.tracking.resident`).
"""

from __future__ import annotations

import os
import shutil
import stat
import tempfile
from pathlib import Path

from jupyter_air import procs

#: The owner's ``<PID> <start time>``, in the folder.
OWNER_NAME = "owner.pid"
#: The folders :func:`sweep` removes once their owner is gone.
PREFIXES = ("air-call-", "air-launcher-")


def make(prefix: str, parent: Path | None = None) -> Path:
    """A new folder ``<prefix>XXXXXXXX`` of mode 0700 (in the temporary folder unless ``parent``), this process's."""
    folder = Path(tempfile.mkdtemp(prefix=prefix, dir=parent))
    claim(folder, os.getpid())
    return folder


def claim(folder: Path, pid: int) -> float | None:
    """Record process ``pid`` as the folder's owner; returns its start time."""
    started = procs.start_time(pid)
    (folder / OWNER_NAME).write_text(f"{pid} {started}")
    return started


def owner_gone(folder: Path) -> bool | None:
    """True once the folder's owner has ended (a reused PID is not it); None when no owner is recorded."""
    try:
        pid, started = (folder / OWNER_NAME).read_text().split()
        return not procs.is_alive(int(pid), None if started == "None" else float(started))
    except (OSError, ValueError):
        return None


def sweep(prefixes: tuple[str, ...] = PREFIXES, parent: Path | None = None) -> list[Path]:
    """Remove this user's folders named ``<prefix>*`` in ``parent`` (default: the temporary folder) whose owner is
    gone; returns them. Folders of other users, links and folders recording no owner are left alone."""
    removed = []
    for prefix in prefixes:
        for folder in (parent or Path(tempfile.gettempdir())).glob(prefix + "*"):
            try:
                info = folder.lstat()
            except OSError:
                continue
            if stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid() and owner_gone(folder):
                shutil.rmtree(folder, ignore_errors=True)
                removed.append(folder)
    return removed
