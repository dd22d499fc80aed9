"""How soon a call's starting card is in the cell: from the cell's execute request to its first display, in a
fresh kernel whose only earlier cell defined a ``@distributed`` function (goal: 0.3 s).

Two days: during a day of work (AIR_HOME's MLflow server and fork server zygote resident after an earlier
kernel's call), and its first call of the day (both stopped, an existing store), when the call then waits for
them. Each figure is a median of 5 fresh kernels, beside the time the whole cell took.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path

from benchmarks.bench_first_use import SETUPS, existing_store, kernel_env, timed_cells

RUNS = 5
GOAL_SECONDS = 0.3


def first_display(home: Path, setup: str, cell: str) -> tuple[float, float, str]:
    """Seconds from ``cell``'s execute request to its first display and to its end, and that display's text."""
    from jupyter_client.manager import KernelManager

    # On Unix sockets beside the store (owner-only), not on loopback TCP ports
    manager = KernelManager(kernel_name="python3", transport="ipc", ip=str(home / "kernel"))
    manager.start_kernel(env=kernel_env(home), cwd=str(home))
    client = manager.client()
    client.start_channels()
    try:
        client.wait_for_ready(timeout=120)
        client.execute_interactive(setup, timeout=300)
        started = time.perf_counter()
        msg_id = client.execute(cell)
        shown, text = None, ""
        while True:
            message = client.get_iopub_msg(timeout=300)
            if message["parent_header"].get("msg_id") != msg_id:
                continue
            kind, content = message["msg_type"], message["content"]
            if kind == "display_data" and shown is None:
                shown, text = time.perf_counter() - started, content["data"].get("text/plain", "")
            if kind == "status" and content["execution_state"] == "idle":
                return (shown if shown is not None else float("nan")), time.perf_counter() - started, text
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)


def main() -> None:
    from benchmarks.baseline import start_resident_server, stop_resident_servers

    setup, cell = SETUPS[".distributed()"]
    with tempfile.TemporaryDirectory(prefix="air-bench-starting-") as tmp:
        home = existing_store(Path(tmp))
        try:
            start_resident_server(kernel_env(home))
            timed_cells(home, [setup, cell], 2)  # an earlier kernel's call: its zygote stays up
            _report("a day of work", [first_display(home, setup, cell) for _ in range(RUNS)])
            cold = []
            for _ in range(RUNS):
                stop_resident_servers(Path(tmp))
                cold.append(first_display(home, setup, cell))
            _report("the first call of the day", cold)
        finally:
            stop_resident_servers(Path(tmp))


def _report(day: str, figures: list[tuple[float, float, str]]) -> None:
    shown = statistics.median(f[0] for f in figures)
    whole = statistics.median(f[1] for f in figures)
    print(f"first .distributed() in a fresh kernel, {day} (median of {RUNS}):")
    print(f"  starting card after {shown:.3f} s ({', '.join(f'{f[0]:.3f}' for f in figures)})")
    print(f"  it first said: {figures[0][2]!r}")
    print(f"  the whole cell {whole:.2f} s ({', '.join(f'{f[1]:.2f}' for f in figures)})")
    print(f"  goal <= {GOAL_SECONDS} s: {'met' if shown <= GOAL_SECONDS else 'NOT met'}")


if __name__ == "__main__":
    main()
