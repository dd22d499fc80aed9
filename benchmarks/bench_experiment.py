"""Experiment panel: server CPU of its polls over 100 runs (one RUNNING) against the GPU panel's own polls, and
the latency of the runs route with 1,000 runs in the store."""

from __future__ import annotations

import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import quote

import psutil

from benchmarks.bench_gpu import TOKEN, _percentile
from benchmarks.bench_gpu import start_server as start_gpu_server

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOK = "work/train.ipynb"
#: Default poll intervals of the two panels (schema/experiment.json, schema/plugin.json), in seconds.
EXPERIMENT_POLL_SECONDS, GPU_POLL_SECONDS = 5, 10
#: Seconds of each measured window of server CPU.
WINDOW_SECONDS = 60
#: The server stops sampling GPUs this long after the last request to the GPU routes.
IDLE_TIMEOUT_SECONDS = 15
#: The embedded MLflow UI's processes would start during the measurements: they are not what is measured.
NO_UI = ("--JupyterAir.mlflow_ui_autostart=False",)


def fill_store(home: Path, root: Path, runs: int, start_ms: int, running: bool) -> None:
    """``runs`` finished runs of the notebook (params, a few metrics, the tags a notebook call writes), the
    newest one RUNNING when ``running``; written in a subprocess with the server's AIR_HOME."""
    code = f"""
import os, time
from mlflow.entities import Metric, Param
from jupyter_air.tracking.store import client
from jupyter_air.tracking.store import ensure_experiment
c = client()
experiment = ensure_experiment("/Users/bench/train")
path = {str(root / NOTEBOOK)!r}
for i in range({runs}):
    start = {start_ms} + i * 1000
    tags = {{"air.source": "distributed", "air.notebook_path": path, "air.world_size": "2", "air.gpus": "2"}}
    run = c.create_run(experiment, start_time=start, tags=tags, run_name=f"run-{{i}}")
    rid = run.info.run_id
    c.log_batch(rid, params=[Param(f"p{{k}}", str(k)) for k in range(5)],
                metrics=[Metric(f"m{{k}}", k * 0.1, start + 500, 0) for k in range(6)]
                + [Metric("system/cpu_utilization_percentage", 12.0, start + 500, 0)])
    if not ({running} and i == {runs} - 1):
        c.set_terminated(rid, end_time=start + 900)
"""
    env = {**os.environ, "AIR_HOME": str(home), "PYTHONPATH": str(ROOT)}
    env.pop("MLFLOW_TRACKING_URI", None)
    subprocess.run([sys.executable, "-c", code], env=env, check=True)


def start_server(
    home: Path, root: Path, more: tuple[str, ...] = (), interval: float = 10, idle: float = IDLE_TIMEOUT_SECONDS
) -> tuple[subprocess.Popen, str]:
    """A Jupyter server on ``root`` with AIR_HOME ``home`` and 8 simulated GPUs sampled every ``interval`` s, idle
    after ``idle`` s; ``more`` arguments (each setting once: traitlets drops a section that repeats one)."""
    env = {k: v for k, v in os.environ.items() if k != "MLFLOW_TRACKING_URI"}
    args = (f"--ServerApp.root_dir={root}", f"--JupyterAir.idle_timeout_seconds={idle}", *more)
    proc, url = start_gpu_server(8, interval, args, {**env, "AIR_HOME": str(home)})
    base = url.removesuffix("gpu")
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            asyncio.run(_get(base + "version"))
            return proc, base
        except OSError:  # listening, but the extension not loaded yet
            time.sleep(0.3)
    proc.kill()
    raise RuntimeError("benchmark server did not answer within 60 s")


async def _get(url: str) -> bytes:
    from tornado.httpclient import AsyncHTTPClient

    response = await AsyncHTTPClient().fetch(url, headers={"Authorization": f"token {TOKEN}"})
    return response.body


def _timed(urls: list[str], rounds: int) -> list[float]:
    """Seconds per round of GETs of ``urls`` one after another (a poll), ``rounds`` times."""

    async def run() -> list[float]:
        times = []
        for _ in range(rounds):
            started = time.perf_counter()
            for url in urls:
                await _get(url)
            times.append(time.perf_counter() - started)
        return times

    return asyncio.run(run())


def cpu_ms_per_poll(proc: subprocess.Popen, urls: list[str], rounds: int = 100) -> float:
    """Server CPU milliseconds per poll (the GETs of ``urls``), over ``rounds`` polls."""
    server = psutil.Process(proc.pid)
    _timed(urls, 3)  # warm caches and connections
    before = server.cpu_times()
    _timed(urls, rounds)
    after = server.cpu_times()
    return ((after.user - before.user) + (after.system - before.system)) * 1000 / rounds


def cpu_seconds_in_window(proc: subprocess.Popen, urls: list[str], every_seconds: float) -> float:
    """Server CPU seconds over :data:`WINDOW_SECONDS` while one client polls ``urls`` every ``every_seconds``
    (no client when ``urls`` is empty)."""

    async def client() -> None:
        deadline = time.monotonic() + WINDOW_SECONDS
        while time.monotonic() < deadline:
            for url in urls:
                await _get(url)
            await asyncio.sleep(every_seconds if urls else WINDOW_SECONDS)

    server = psutil.Process(proc.pid)
    before = server.cpu_times()
    asyncio.run(client())
    after = server.cpu_times()
    return (after.user - before.user) + (after.system - before.system)


def latency_ms(urls: list[str], rounds: int = 200) -> tuple[float, float]:
    values = _timed(urls, rounds)
    return statistics.median(values) * 1000, _percentile(values, 0.99) * 1000


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        home, root = Path(tmp) / "air", Path(tmp) / "root"
        (root / "work").mkdir(parents=True)
        (root / NOTEBOOK).write_text("{}")
        now = int(time.time() * 1000)
        started = time.perf_counter()
        fill_store(home, root, 100, now - 100_000, running=True)
        print(
            f"store: 100 runs of one notebook (5 params, 7 metrics each), the newest RUNNING "
            f"(written in {time.perf_counter() - started:.0f} s)"
        )
        proc, base = start_server(home, root, NO_UI)
        try:
            notebook = quote(NOTEBOOK, safe="")
            first = asyncio.run(_get(f"{base}runs?notebook={notebook}&limit=50"))
            since = now - 1000  # what the panel asks: the start of the run it holds as RUNNING (the newest)
            experiment_poll = [f"{base}runs?notebook={notebook}&since={since}&limit=200", f"{base}jobs"]
            newest = _newest_sample(base)
            gpu_poll = [f"{base}gpu?since={newest}"]
            load = cpu_ms_per_poll(proc, [f"{base}runs?notebook={notebook}&limit=50", f"{base}jobs"], 50)
            experiment = cpu_ms_per_poll(proc, experiment_poll)
            gpu = cpu_ms_per_poll(proc, gpu_poll)
            print(
                f"first load of the Experiment panel (50 runs + jobs, {len(first) / 1024:.0f} KiB): "
                f"{load:.1f} ms server CPU"
            )
            print(
                f"one poll: Experiment panel (runs since the RUNNING one started + jobs) {experiment:.1f} ms "
                f"server CPU; GPU panel (gpu?since, 8 simulated GPUs) {gpu:.1f} ms"
            )
            time.sleep(IDLE_TIMEOUT_SECONDS + 2)  # the GPU sampler stops: the Experiment panel does not use it
            idle = cpu_seconds_in_window(proc, [], 0)
            panel = cpu_seconds_in_window(proc, experiment_poll, EXPERIMENT_POLL_SECONDS)
            gpu_panel = cpu_seconds_in_window(proc, gpu_poll, GPU_POLL_SECONDS)
            experiment_cost, gpu_cost = (panel - idle) * 1000, (gpu_panel - idle) * 1000
            print(
                f"server CPU over {WINDOW_SECONDS} s with one panel open at its default interval, the server's "
                f"idle {idle * 1000:.0f} ms taken off: Experiment panel (every {EXPERIMENT_POLL_SECONDS} s while a "
                f"run is RUNNING) {experiment_cost:.0f} ms; GPU panel (every {GPU_POLL_SECONDS} s, with its "
                f"sampler) {gpu_cost:.0f} ms; ratio {experiment_cost / max(gpu_cost, 1e-3):.1f}x "
                "(baseline: the GPU panel's own cost)"
            )
        finally:
            proc.terminate()
            proc.wait(10)
        fill_store(home, root, 900, now - 2_000_000, running=False)
        proc, base = start_server(home, root, NO_UI)
        try:
            notebook = quote(NOTEBOOK, safe="")
            gpu_poll = [f"{base}gpu?since={_newest_sample(base)}"]
            for label, url in (
                ("first page (limit 50)", f"{base}runs?notebook={notebook}&limit=50"),
                (
                    "a poll (since the RUNNING run started)",
                    f"{base}runs?notebook={notebook}&since={now - 1000}&limit=200",
                ),
                ("timeline, last 2 hours", f"{base}runs?from={now - 7_200_000}&to={now}"),
                ("timeline, a poll (the last 10 s)", f"{base}runs?from={now - 10_000}&to={now}"),
            ):
                median, p99 = latency_ms([url])
                print(f"runs route with 1,000 runs in the store, {label}: median {median:.1f} ms, p99 {p99:.1f} ms")
            median, p99 = latency_ms(gpu_poll)
            print(f"  for scale, GET gpu?since on the same server: median {median:.1f} ms, p99 {p99:.1f} ms")
        finally:
            proc.terminate()
            proc.wait(10)


def _newest_sample(base: str) -> int:
    import json

    return json.loads(asyncio.run(_get(base + "gpu")))["timestamps_ms"][-1]


if __name__ == "__main__":
    main()
