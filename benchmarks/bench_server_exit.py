"""What is left after a Jupyter server stops: a server starts on a fresh AIR_HOME (as `make demo` does: the fork
server zygote with it), its MLflow UI is opened (AIR_HOME's MLflow server starts), then it gets SIGTERM and nothing
else uses AIR_HOME.

Measured (medians of 5): the memory each resident process holds while the server runs (RSS, the MLflow server with
its uvicorn worker), seconds from SIGTERM to the server's own exit (the baseline: what Jupyter itself takes), and
seconds from SIGTERM until no process of that AIR_HOME is left. Before, the residents stayed until idle for
``AIR_MLFLOW_IDLE_SECONDS`` / ``AIR_FORKS_IDLE_SECONDS`` (1800 s each). The goal: nothing left after 10 s.
"""

from __future__ import annotations

import os
import signal
import statistics
import tempfile
import time
from pathlib import Path

import psutil

from benchmarks.bench_first_use import answers_ok, start_server, wait_for

RUNS = 5
GOAL_SECONDS = 10.0


def _left(home: Path) -> list[psutil.Process]:
    found = []
    for proc in psutil.process_iter():
        try:
            if proc.environ().get("AIR_HOME") == str(home) and proc.status() != psutil.STATUS_ZOMBIE:
                found.append(proc)
        except psutil.Error:
            continue
    return found


def rss_mib(pid: int) -> float:
    """The memory (RSS, MiB) of ``pid`` and every process below it."""
    proc = psutil.Process(pid)
    return sum(p.memory_info().rss for p in [proc, *proc.children(recursive=True)]) / 2**20


def _zygote(home: Path) -> int | None:
    """The PID of the zygote the server started for ``home``, once it holds its lock."""
    from jupyter_air.training import zygote_client

    held = [held for lock in home.glob("forks-*.pid") if (held := zygote_client.holder(lock))]
    return held[0][0] if held else None


def one_exit(home: Path) -> dict[str, float]:
    """Start a server on ``home``, open its MLflow UI, stop it; the figures of one run."""
    from jupyter_air.tracking import resident

    token = "bench-server-exit"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MLFLOW_", "JPY_", "AIR_"))}
    env.update(AIR_HOME=str(home), JUPYTER_AIR_GPU_SOURCE="none")
    server, base = start_server(home, env, token)
    try:
        wait_for(lambda: answers_ok(base + "mlflow/", token), 300)
        wait_for(lambda: _zygote(home) is not None, 120)
        mlflow_server = resident.read(resident.record_path(resident.embedded_uri(home), home))
        figures = {
            "mlflow_server_mib": rss_mib(mlflow_server.pid),
            "zygote_mib": rss_mib(_zygote(home)),
        }
        stopped = time.perf_counter()
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=60)
        figures["server_exit_s"] = time.perf_counter() - stopped
        wait_for(lambda: not _left(home), 120)
        figures["nothing_left_s"] = time.perf_counter() - stopped
        return figures
    finally:
        if server.poll() is None:
            server.kill()


def main() -> None:
    runs = []
    for n in range(RUNS):
        with tempfile.TemporaryDirectory(prefix="air-bench-exit-") as folder:
            runs.append(one_exit(Path(folder)))
        print(f"run {n + 1}: " + ", ".join(f"{k} {v:.1f}" for k, v in runs[-1].items()), flush=True)
    median = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
    print(
        f"resident memory while the server runs: MLflow server {median['mlflow_server_mib']:.0f} MiB RSS, "
        f"zygote {median['zygote_mib']:.0f} MiB RSS"
    )
    print(f"SIGTERM -> the Jupyter server's own exit (baseline): {median['server_exit_s']:.1f} s")
    print(
        f"SIGTERM -> no jupyter_air process of AIR_HOME left: {median['nothing_left_s']:.1f} s "
        f"(goal <= {GOAL_SECONDS:g} s; before: up to 1800 s)"
    )
