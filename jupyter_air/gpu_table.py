"""A text table of the node's GPUs right now, for ``%air_gpu``."""

from __future__ import annotations

import io

from jupyter_air.gpu.sources import opened


def _gib(value: int | None) -> str:
    return "-" if value is None else f"{value / 2**30:.1f}"


def _num(value: float | None, fmt: str = "{:.0f}") -> str:
    return "-" if value is None else fmt.format(value)


def gpu_table(kind: str | None = None) -> str:
    """One row per GPU (utilisation, memory, temperature, power, processes), or why there is none."""
    from rich.console import Console
    from rich.table import Table

    with opened(kind) as source:
        if not source.available:
            return f"No GPU on this node: {source.reason or 'no GPU source could be opened'}"
        reading = source.read()
    title = f"GPUs on this node (source: {source.name}{', NOT real hardware' if source.name == 'simulated' else ''})"
    table = Table(title=title)
    for column in ("GPU", "Name", "Util %", "Memory used / total GiB", "Temp °C", "Power W", "Processes", "Error"):
        table.add_column(column)
    for device in source.devices:
        i = device.index
        procs = [p for p in reading.processes if p.gpu_index == i]
        table.add_row(
            str(i),
            device.name or "-",
            _num(reading.utilization_percent[i]),
            f"{_gib(reading.memory_used_bytes[i])} / {_gib(reading.memory_total_bytes[i])}",
            _num(reading.temperature_celsius[i]),
            _num(reading.power_watts[i], "{:.1f}"),
            ", ".join(f"{p.pid} {p.name or ''} ({_gib(p.used_memory_bytes)} GiB)".strip() for p in procs) or "-",
            reading.errors[i] or "",
        )
    out = io.StringIO()
    Console(file=out, width=140, force_terminal=False, color_system=None).print(table)
    return out.getvalue().rstrip()
