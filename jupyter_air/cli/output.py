"""Rendering for `air`: JSON (its shapes are ``workloads.jobs.shapes``'s), and tables with colour only on a terminal,
their control characters written out (a name cannot move the cursor or write the clipboard)."""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Any

from jupyter_air.format import duration, visible
from jupyter_air.workloads.state.records import Job

_STATUS_STYLE = {
    "PENDING": "yellow",
    "RUNNING": "cyan",
    "SUCCEEDED": "green",
    "FINISHED": "green",
    "FAILED": "red",
    "TIMED_OUT": "red",
    "CANCELED": "magenta",
    "KILLED": "magenta",
}
LIST_COLUMNS = ("RUN ID", "EXPERIMENT", "STATUS", "STARTED", "DURATION", "ATTEMPTS", "MLFLOW RUN", "USER", "GPUS")


def print_json(data: Any, compact: bool = False) -> None:
    print(json.dumps(data, separators=(",", ":")) if compact else json.dumps(data, indent=2))


def is_terminal() -> bool:
    """A person's terminal: not a pipe, and not a notebook's `!air ...` (a kernel's pseudo-terminal, shown as text)."""
    return sys.stdout.isatty() and "JPY_PARENT_PID" not in os.environ


def clock(ms: int | None) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(ms / 1000)) if ms else "-"


def gpus(job: Job) -> str:
    if job.gpus:
        return ",".join(str(i) for i in job.gpus)
    return "-" if job.num_accelerators == 0 else f"{job.num_accelerators} (not reserved)"


def nodes(job: Job) -> str:
    """``1`` on this machine; ``2 (Ray cluster at <address>)`` on a cluster."""
    address = job.workload["compute"].get("ray_address")
    return f"{job.num_nodes} (Ray cluster at {address})" if address else str(job.num_nodes)


def ray_job(job: Job) -> str:
    """``RUNNING (submission <id> on <job server>)`` for a supervisor run as a Ray Job, else ``-``."""
    if job.ray_job_url is None:
        return "-"
    return f"{job.ray_status or 'not known'} (submission {job.job_run_id} on {job.ray_job_url})"


def list_row(job: Job) -> list[str]:
    latest = job.attempts[-1] if job.attempts else None
    return [
        job.job_run_id,
        job.experiment_name,
        job.status,
        clock(job.started_ms),
        duration(job.duration_seconds),
        f"{len(job.attempts)}/{job.max_retries + 1}",
        (latest.mlflow_run_id or "-") if latest else "-",
        job.user,
        gpus(job),
    ]


def table(columns: tuple[str, ...], rows: list[list[str]], status_column: int | None = None) -> None:
    """A rich table on a terminal; plain space-aligned columns (easy to grep) otherwise."""
    rows = [[visible(str(c)) for c in row] for row in rows]
    if is_terminal():
        from rich.console import Console
        from rich.markup import escape
        from rich.table import Table

        grid = Table(box=None, header_style="bold")
        for name in columns:
            grid.add_column(name, overflow="fold")
        for row in rows:
            cells = [escape(c) for c in row]
            if status_column is not None:
                cells[status_column] = f"[{_STATUS_STYLE.get(row[status_column], 'default')}]{row[status_column]}[/]"
            grid.add_row(*cells)
        Console().print(grid)
        return
    widths = [max(len(str(c)) for c in col) for col in zip(columns, *rows, strict=True)]
    for row in [list(columns), *rows]:
        print("  ".join(str(c).ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())


def fields(pairs: list[tuple[str, str]]) -> None:
    """`key: value` lines, keys bold and statuses coloured on a terminal."""
    pairs = [(key, visible(value)) for key, value in pairs]
    width = max(len(k) for k, _ in pairs) + 1
    if is_terminal():
        from rich.console import Console
        from rich.markup import escape

        console = Console(highlight=False)
        for key, value in pairs:
            style = _STATUS_STYLE.get(value)
            shown = f"[{style}]{escape(value)}[/]" if style else escape(value)
            console.print(f"[bold]{escape(key + ':'):<{width}}[/] {shown}")
        return
    for key, value in pairs:
        print(f"{key + ':':<{width}} {value}")
