"""The first ``.distributed()`` of the day: a Jupyter server has just started on an AIR_HOME where nothing of
jupyter_air runs yet (no fork server zygote; the MLflow server resident, as the server keeps it up), a person opens a
notebook a few seconds later, and its kernel runs a ``@distributed`` definition and its first no-op call on 2 CPU
ranks back to back.

Side by side in one run (medians of 5, interleaved so both see the same load): the server as it is
(``c.JupyterAir.fork_zygote_at_start``, the zygote started with the server), the baseline the same server with it
off (the behavior before: the first kernel's call starts the zygote), and a bare ``import mlflow`` in a fresh kernel.
The goal: the first call at most 0.3x the bare import.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path

from benchmarks.bench_first_use import (
    GOAL_RUNS,
    HELD,
    SETUPS,
    existing_store,
    kernel_env,
    listed,
    start_server,
    timed_cells,
)

#: Seconds between the server's start and the notebook's first cell: a person opening a notebook.
OPENING_SECONDS = 5.0
RATIO_GOAL = 0.3


def first_call_after_server_start(home: Path, warm: bool) -> tuple[float, str]:
    """Seconds of the definition and first call in a kernel started ``OPENING_SECONDS`` after a Jupyter server on
    ``home`` (with ``fork_zygote_at_start`` set to ``warm``), and what the kernel holds afterwards."""
    from jupyter_air.training import zygote_client

    token = "bench-first-day"
    options = ("--JupyterAir.gpu_source=none", f"--JupyterAir.fork_zygote_at_start={warm}")
    server, _ = start_server(home, kernel_env(home), token, *options)
    try:
        time.sleep(OPENING_SECONDS)
        cells = list(SETUPS[".distributed()"])
        return timed_cells(home, [*cells, HELD], len(cells))
    finally:
        server.terminate()
        server.wait(30)
        for lock in home.glob("forks-*.pid"):  # the next run starts the day again: no zygote (the MLflow server stays)
            zygote_client.stop(lock)


def main() -> None:
    from benchmarks.baseline import start_resident_server, stop_resident_servers

    with tempfile.TemporaryDirectory(prefix="air-bench-first-day-") as tmp:
        folder = Path(tmp)
        home = existing_store(folder)
        start_resident_server(kernel_env(home))
        try:
            figures: dict[str, list[float]] = {"import mlflow": [], "baseline": [], "now": []}
            held = {}
            for _ in range(GOAL_RUNS):
                figures["import mlflow"].append(timed_cells(home, ["import mlflow"], 1)[0])
                for name, warm in (("baseline", False), ("now", True)):
                    seconds, held[name] = first_call_after_server_start(home, warm)
                    figures[name].append(seconds)
        finally:
            stop_resident_servers(folder)
    _report(figures, held)


def _report(figures: dict[str, list[float]], held: dict[str, str]) -> None:
    bare = statistics.median(figures["import mlflow"])
    when = f"{OPENING_SECONDS:g} s after a Jupyter server started"
    print(f"First .distributed() of the day, {when} (median of {GOAL_RUNS}):")
    print(f"  bare `import mlflow` in a fresh kernel: {bare:.2f} s ({listed(figures['import mlflow'])})")
    labels = {"baseline": "baseline: fork_zygote_at_start off", "now": "now: the server starts the zygote"}
    for name, label in labels.items():
        median = statistics.median(figures[name])
        ratio = f"{median / bare:.2f}x import mlflow"
        print(f"  {label}: {median:.2f} s = {ratio} ({listed(figures[name])}); the kernel then holds {held[name]}")
    ratio = statistics.median(figures["now"]) / bare
    print(f"  goal <= {RATIO_GOAL}x: {'met' if ratio <= RATIO_GOAL else 'NOT met'} ({ratio:.2f}x)")


if __name__ == "__main__":
    main()
