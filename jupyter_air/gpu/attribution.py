"""Names the notebook behind a GPU process: a kernel of this server, or a process below one (its fork server's,
forked by AIR_HOME's zygote, counted as below it)."""

from __future__ import annotations

import psutil

from jupyter_air import procs

from .types import GpuProcess


def kernel_of(pid: int, kernel_pids: dict[int, str], known: dict[int, str | None] | None = None) -> str | None:
    """The id of the kernel that is ``pid`` or one of its ancestors, if any.

    Walks the parent pids one at a time (:func:`~jupyter_air.procs.parent_of`); ``known`` (pid: kernel id or
    None) is read and filled on the way, so the processes of one answer, often children of one kernel, walk each
    ancestor once.
    """
    known = {} if known is None else known
    chain, found = [], None
    while pid > 0:
        if pid in known:
            found = known[pid]
            break
        if pid in kernel_pids:
            found = kernel_pids[pid]
            break
        chain.append(pid)
        try:
            pid = procs.parent_of(pid)
        except (psutil.Error, OSError):
            break
    for walked in chain:
        known[walked] = found
    return found


def attribute(processes: list[GpuProcess], kernel_pids: dict[int, str], kernel_paths: dict[str, str]) -> list[dict]:
    """Processes as JSON rows with ``kernel_id`` and notebook ``path`` where the process belongs to a kernel.

    Blocking (it reads /proc for the ancestors of each process): call it off the event loop when there are
    kernels to look for.
    """
    known: dict[int, str | None] = {}
    rows = []
    for proc in processes:
        kernel_id = kernel_of(proc.pid, kernel_pids, known) if kernel_pids else None
        rows.append(
            {
                "gpu_index": proc.gpu_index,
                "pid": proc.pid,
                "name": proc.name,
                "used_memory_bytes": proc.used_memory_bytes,
                "kernel_id": kernel_id,
                "path": kernel_paths.get(kernel_id) if kernel_id else None,
            }
        )
    return rows
