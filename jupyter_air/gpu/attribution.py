"""Names the notebook behind a GPU process: a kernel of this server, or a child of one."""

from __future__ import annotations

import psutil

from .types import GpuProcess


def kernel_of(pid: int, kernel_pids: dict[int, str]) -> str | None:
    """The id of the kernel that is ``pid`` or one of its ancestors, if any."""
    if pid in kernel_pids:
        return kernel_pids[pid]
    try:
        ancestors = psutil.Process(pid).parents()
    except (psutil.Error, OSError):
        return None
    for parent in ancestors:
        if parent.pid in kernel_pids:
            return kernel_pids[parent.pid]
    return None


def attribute(processes: list[GpuProcess], kernel_pids: dict[int, str], kernel_paths: dict[str, str]) -> list[dict]:
    """Processes as JSON rows with ``kernel_id`` and notebook ``path`` where the process belongs to a kernel."""
    rows = []
    for proc in processes:
        kernel_id = kernel_of(proc.pid, kernel_pids) if kernel_pids else None
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
