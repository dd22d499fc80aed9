"""A damaged ``mlflow.db`` under a Jupyter server that starts its MLflow UI in the background: UI starts and CPU over
a window with the backoff (``c.JupyterAir.mlflow_ui_retry_seconds``, its default) against a start at every check
(the setting at 0: the behaviour before it existed, the baseline)."""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

import psutil

from benchmarks.bench_experiment import start_server
from benchmarks.bench_polls import _stop

#: Seconds each server is watched once started.
WINDOW_SECONDS = 90
#: What each failed start of the UI writes to ``$AIR_HOME/logs/mlflow-ui.log``.
FAILED_START = "the MLflow UI cannot start"


def watch(tmp: Path, name: str, retry_seconds: float | None) -> tuple[int, float]:
    """UI starts and server CPU seconds (its own and its UI processes') over the window."""
    home, root = tmp / name / "air", tmp / name / "root"
    root.mkdir(parents=True)
    home.mkdir(mode=0o700)
    (home / "mlflow.db").write_bytes(os.urandom(64 << 10))
    more = () if retry_seconds is None else (f"--JupyterAir.mlflow_ui_retry_seconds={retry_seconds}",)
    proc, _ = start_server(home, root, more)
    try:
        server = psutil.Process(proc.pid)
        time.sleep(WINDOW_SECONDS)
        times = server.cpu_times()
        cpu = times.user + times.system + times.children_user + times.children_system
    finally:
        _stop(proc)
    log = home / "logs" / "mlflow-ui.log"
    return (log.read_text().count(FAILED_START) if log.exists() else 0), cpu


def main() -> None:
    print(f"machine: {psutil.cpu_count()} CPUs, {psutil.cpu_percent(interval=3):.0f}% busy with other work just before")
    with tempfile.TemporaryDirectory() as tmp:
        before = watch(Path(tmp), "every-check", 0)
        after = watch(Path(tmp), "backoff", None)
    for label, (starts, cpu) in (("start at every check (retry 0, the baseline)", before), ("backoff", after)):
        print(
            f"  {label}: {starts} UI starts in {WINDOW_SECONDS} s, server CPU (UI processes included) {cpu:.1f} s, "
            f"{cpu / WINDOW_SECONDS:.2f} of a core"
        )
    print(f"  ratio of CPU, backoff / baseline: {after[1] / max(before[1], 1e-9):.2f}x")


if __name__ == "__main__":
    main()
