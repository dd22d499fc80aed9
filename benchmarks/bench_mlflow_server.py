"""AIR_HOME's resident MLflow server: seconds from its start to its first answer, its CPU-seconds until then and
the memory it holds (RSS of every process it is), medians of 5 on a fresh store each.

Baseline, in the same run: ``mlflow server`` itself on the same kind of store, a Unix socket and MLflow's job runner
off, as the resident server ran it before it served MLflow's app in its own process (MLflow's command, then a uvicorn
process of its own).
"""

from __future__ import annotations

import os
import shlex
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

from benchmarks.bench_server_exit import rss_mib
from jupyter_air.tracking import resident
from jupyter_air.tracking.store import prepare_store, tracking_uri

RUNS = 5


def _figures(pid: int, server: resident.Server) -> tuple[float, float, float]:
    """Seconds until ``server`` answers, then the CPU-seconds and MiB of ``pid``'s process tree; the tree stopped."""
    started = time.monotonic()
    while not server.answers():
        time.sleep(0.05)
    seconds = time.monotonic() - started
    tree = [psutil.Process(pid), *psutil.Process(pid).children(recursive=True)]
    cpu = sum(sum(p.cpu_times()[:2]) for p in tree)
    rss = rss_mib(pid)
    for process in reversed(tree):
        process.send_signal(signal.SIGTERM)
    psutil.wait_procs(tree, 30)
    return seconds, cpu, rss


def _resident(folder: Path) -> tuple[float, float, float]:
    os.environ["AIR_HOME"] = str(folder / "home")
    prepare_store(tracking_uri())
    server = resident.ensure(tracking_uri())
    return _figures(server.pid, server)


def _plain(folder: Path) -> tuple[float, float, float]:
    uri = f"sqlite:///{folder / 'mlflow.db'}"
    prepare_store(uri)
    socket = folder / "mlflow.sock"
    command = [sys.executable, "-m", "mlflow", "server", "--backend-store-uri", uri, "--workers", "1"]
    command += [
        "--artifacts-destination",
        str(folder / "artifacts"),
        "--uvicorn-opts",
        f"--uds {shlex.quote(str(socket))}",
    ]
    env = {**os.environ, "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"}  # as the resident server has it
    process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return _figures(process.pid, resident.Server(process.pid, None, str(socket), ""))


def main() -> None:
    figures: dict[str, list[tuple[float, float, float]]] = {"resident": [], "mlflow server": []}
    with tempfile.TemporaryDirectory() as scratch:
        for run in range(RUNS):  # interleaved, so both see the same load
            for name, start in (("resident", _resident), ("mlflow server", _plain)):
                folder = Path(scratch) / f"{name.replace(' ', '-')}-{run}"
                folder.mkdir()
                figures[name].append(start(folder))
    medians = {name: [statistics.median(f[i] for f in runs) for i in range(3)] for name, runs in figures.items()}
    print(f"AIR_HOME's MLflow server, start to first answer (median of {RUNS}, fresh store each):")
    for name, (seconds, cpu, rss) in medians.items():
        print(f"  {name:14} {seconds:5.2f} s, {cpu:5.2f} CPU-s, {rss:4.0f} MiB")
    ours, plain = medians["resident"], medians["mlflow server"]
    ratios = ", ".join(f"{ours[i] / plain[i]:.2f}x {what}" for i, what in enumerate(("time", "CPU", "memory")))
    print(f"  ratio to `mlflow server`: {ratios}")
