"""The panels' polls under load, in real servers: 100 pollers of the GPU route against 100 of
jupyter-resource-usage's route in the same server (the baseline), then the GPU route's tail without and with 100
Experiment-panel pollers; and the server CPU of one poll that finds nothing new."""

from __future__ import annotations

import asyncio
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import quote

import psutil
from tornado.simple_httpclient import HTTPTimeoutError

from benchmarks.bench_experiment import NOTEBOOK, fill_store, start_server
from benchmarks.bench_gpu import TOKEN, _percentile
from jupyter_air.server.handlers import MAX_EPOCH_MS  # a since later than every sample: the answer holds none

ROOT = Path(__file__).resolve().parent.parent
#: Pollers per route, each polling every EVERY_SECONDS with a random phase (the Experiment panel's interval
#: while a run runs, and jupyter-resource-usage's).
POLLERS, EVERY_SECONDS = 100, 5.0
#: The settings compared take turns, SLICES slices of SLICE_SECONDS each, so that the machine's other work weighs
#: on each alike; the comparison is made ROUNDS times.
SLICE_SECONDS, SLICES, ROUNDS = 15, 4, 2
#: Seconds between two samples of the servers' 8 simulated GPUs.
SAMPLE_SECONDS = 5
BASELINE = "api/metrics/v1"
#: The baseline in the same server; its Prometheus collector (every second, on the event loop) is off, so that
#: neither route's tail carries it. The embedded MLflow UI is not started: its process is not what is measured.
SERVER_ARGS = (
    "--ServerApp.jpserver_extensions=jupyter_resource_usage=True",
    "--ResourceUseDisplay.enable_prometheus_metrics=False",
    "--JupyterAir.mlflow_ui_autostart=False",
)


class Routes:
    """The URLs the panels poll on one server."""

    def __init__(self, base: str, since_ms: int):
        root = base.removesuffix("jupyter-air/")
        self.gpu = base + "gpu"
        self.runs = f"{base}runs?notebook={quote(NOTEBOOK, safe='')}&since={since_ms}&limit=200"
        self.timeline = f"{base}runs?from={since_ms - SAMPLE_SECONDS * 1000}&to={since_ms}"
        self.baseline = root + BASELINE
        self.contents = root + "api/contents"
        self.version = base + "version"


#: Seconds a GET may take; one that takes longer counts with this latency (a saturated route does that).
TIMEOUT_SECONDS = 60.0


async def _fetch(client, url: str) -> bytes:
    headers = {"Authorization": f"token {TOKEN}"}
    return (await client.fetch(url, headers=headers, request_timeout=TIMEOUT_SECONDS)).body


async def _poller(client, url: str, deadline: float, latencies: list[float]) -> None:
    """GETs ``url`` every EVERY_SECONDS until ``deadline``; the GPU route with ``since`` = its newest sample."""
    gpu, newest = url.endswith("/gpu"), int(time.time() * 1000) - SAMPLE_SECONDS * 1000
    await asyncio.sleep(random.uniform(0, EVERY_SECONDS))
    tick = time.monotonic()
    while tick < deadline:
        started = time.perf_counter()
        try:
            body = await _fetch(client, f"{url}?since={newest}" if gpu else url)
        except HTTPTimeoutError:
            body = None
        latencies.append(time.perf_counter() - started)
        if gpu and body is not None:
            newest = (json.loads(body)["timestamps_ms"] or [newest])[-1]
        tick += EVERY_SECONDS
        await asyncio.sleep(max(0.0, tick - time.monotonic()))


class Turns:
    """Settings (the routes polled by POLLERS pollers each) taking turns on one server; latencies per setting and
    route (``contents``: 5 clients listing the server's root folder, each every EVERY_SECONDS: Jupyter's own
    ``api/contents``), and the server's CPU per setting."""

    def __init__(self, proc: subprocess.Popen, routes: Routes, settings: dict[str, list[str]]):
        self.server, self.routes, self.settings = psutil.Process(proc.pid), routes, settings
        self.latencies = {name: {route: [] for route in [*polled, "contents"]} for name, polled in settings.items()}
        self.cpu_seconds = dict.fromkeys(settings, 0.0)

    def run(self) -> Turns:
        for _ in range(SLICES):
            for name, polled in self.settings.items():
                before = self.server.cpu_times()
                asyncio.run(self._slice(polled, self.latencies[name]))
                after = self.server.cpu_times()
                self.cpu_seconds[name] += (after.user - before.user) + (after.system - before.system)
        return self

    async def _slice(self, polled: list[str], found: dict[str, list[float]]) -> None:
        from tornado.httpclient import AsyncHTTPClient

        client = AsyncHTTPClient(max_clients=POLLERS * len(polled) + 2)
        deadline = time.monotonic() + SLICE_SECONDS
        pollers = [_poller(client, getattr(self.routes, r), deadline, found[r]) for r in polled for _ in range(POLLERS)]
        contents = [_poller(client, self.routes.contents, deadline, found["contents"]) for _ in range(5)]
        await asyncio.gather(*pollers, *contents)

    def cpu_ms_per_second(self, name: str) -> float:
        return self.cpu_seconds[name] * 1000 / (SLICES * SLICE_SECONDS)


def cpu_ms_per_get(proc: subprocess.Popen, urls: dict[str, str], count: int = 100, blocks: int = 5) -> str:
    """Server CPU milliseconds per GET of each URL: the median of ``blocks`` blocks of ``count`` GETs in a row, the
    URLs' blocks taking turns (after one block each to warm up)."""
    from tornado.httpclient import AsyncHTTPClient

    async def run(url: str) -> None:
        client = AsyncHTTPClient()
        for _ in range(count):
            await _fetch(client, url)

    server = psutil.Process(proc.pid)
    found: dict[str, list[float]] = {name: [] for name in urls}
    for block in range(blocks + 1):
        for name, url in urls.items():
            before = server.cpu_times()
            asyncio.run(run(url))
            after = server.cpu_times()
            if block:
                found[name].append(((after.user - before.user) + (after.system - before.system)) * 1000 / count)
    return ", ".join(f"{name} {statistics.median(values):.2f} ms" for name, values in found.items())


class Trainer:
    """A process logging a metric to the RUNNING run every second, as a training loop does."""

    def __init__(self, home: Path):
        code = """
import time
from mlflow.entities import Metric
from jupyter_air.tracking.store import client
c = client()
experiments = [e.experiment_id for e in c.search_experiments()]
run = c.search_runs(experiments, "attributes.status = 'RUNNING'")[0].info.run_id
step = 0
print("ready", flush=True)
while True:
    c.log_batch(run, metrics=[Metric("train_loss", 1 / (step + 1), int(time.time() * 1000), step)])
    step += 1
    time.sleep(1)
"""
        env = {**os.environ, "AIR_HOME": str(home), "PYTHONPATH": str(ROOT)}
        env.pop("MLFLOW_TRACKING_URI", None)
        self.proc = subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE, text=True)
        self.proc.stdout.readline()

    def stop(self) -> None:
        self.proc.kill()
        self.proc.wait(10)


def _ms(values: list[float]) -> str:
    return f"median {statistics.median(values) * 1e3:.1f} ms, p99 {_percentile(values, 0.99) * 1e3:.1f} ms"


def _p99(values: list[float]) -> float:
    return _percentile(values, 0.99)


def _start(home: Path, root: Path) -> tuple[subprocess.Popen, str]:
    """The server, checked to have taken its settings (a bad one would leave them all at their defaults)."""
    proc, base = start_server(home, root, SERVER_ARGS, interval=SAMPLE_SECONDS, idle=3600)
    answer = json.loads(asyncio.run(_get(base + "gpu")))
    if answer["interval_seconds"] != SAMPLE_SECONDS or len(answer["devices"]) != 8:
        proc.kill()
        raise RuntimeError(f"the benchmark server ignored its settings: {answer['interval_seconds']} s")
    return proc, base


async def _get(url: str) -> bytes:
    from tornado.httpclient import AsyncHTTPClient

    return await _fetch(AsyncHTTPClient(), url)


def _settle(proc: subprocess.Popen, routes: Routes) -> None:
    """Wait until the server's start-up work (extensions loading in the background) is over."""
    server = psutil.Process(proc.pid)
    asyncio.run(_get(routes.version))
    for _ in range(30):
        if server.cpu_percent(interval=1.0) < 5:
            return


def _stop(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(30)
    except subprocess.TimeoutExpired:  # still answering a backlog of requests
        proc.kill()
        proc.wait(10)


def _new_store(tmp: Path, name: str, runs: bool) -> tuple[Path, Path, int]:
    """AIR_HOME and server root of one server; with ``runs``, 100 runs of the notebook, the newest RUNNING."""
    home, root = tmp / name / "air", tmp / name / "root"
    (root / "work").mkdir(parents=True)
    (root / NOTEBOOK).write_text("{}")
    now = int(time.time() * 1000)
    if runs:
        fill_store(home, root, 100, now - 100_000, running=True)
    return home, root, now - 1000  # the panel asks from the start of the run it holds as RUNNING


def against_baseline(tmp: Path) -> None:
    """The GPU route's tail under 100 pollers, against jupyter-resource-usage's under 100, taking turns."""
    home, root, since = _new_store(tmp, "baseline", runs=False)
    proc, base = _start(home, root)
    try:
        routes = Routes(base, since)
        _settle(proc, routes)
        urls = {"gpu?since=newest": f"{routes.gpu}?since={MAX_EPOCH_MS}", BASELINE: routes.baseline}
        costs = cpu_ms_per_get(proc, urls)
        print(f"  server CPU per GET (median of 5 x 100 in a row): {costs}")
        for round_ in range(1, ROUNDS + 1):
            turns = Turns(proc, routes, {"gpu": ["gpu"], "baseline": ["baseline"]}).run()
            gpu, baseline = turns.latencies["gpu"]["gpu"], turns.latencies["baseline"]["baseline"]
            print(
                f"  round {round_}: GPU route {_ms(gpu)}; {BASELINE} {_ms(baseline)}; "
                f"p99 ratio {_p99(gpu) / _p99(baseline):.2f}x"
            )
    finally:
        _stop(proc)


def with_experiment_pollers(tmp: Path) -> None:
    """The GPU route's tail alone and with 100 Experiment-panel pollers, taking turns; then the same while the
    RUNNING run logs a metric every second (each poll then finds something new)."""
    home, root, since = _new_store(tmp, "experiment", runs=True)
    proc, base = _start(home, root)
    settings = {"alone": ["gpu"], "with runs": ["gpu", "runs"]}
    try:
        routes = Routes(base, since)
        _settle(proc, routes)
        urls = {
            "version (the server's floor)": routes.version,
            "gpu?since=newest": f"{routes.gpu}?since={MAX_EPOCH_MS}",
            "runs?notebook&since": routes.runs,
            "runs?from&to (the GPU timeline)": routes.timeline,
        }
        print(f"  server CPU per GET that finds nothing new (median of 5 x 100 in a row): {cpu_ms_per_get(proc, urls)}")
        for round_ in range(1, ROUNDS + 1):
            print(f"  round {round_}:")
            _report(Turns(proc, routes, settings).run(), "the store unchanged")
            trainer = Trainer(home)
            try:
                _report(Turns(proc, routes, settings).run(), "the RUNNING run logging a metric every second")
            finally:
                trainer.stop()
    finally:
        _stop(proc)


def _report(turns: Turns, label: str) -> None:
    alone, both = turns.latencies["alone"], turns.latencies["with runs"]
    print(
        f"    {label}: GPU route alone {_ms(alone['gpu'])}; with {POLLERS} runs pollers {_ms(both['gpu'])}, "
        f"p99 {_p99(both['gpu']) / _p99(alone['gpu']):.2f}x alone's\n"
        f"      runs route {_ms(both['runs'])}; api/contents alone {_ms(alone['contents'])}, with the runs "
        f"pollers {_ms(both['contents'])}; server CPU {turns.cpu_ms_per_second('alone'):.0f} ms/s alone, "
        f"{turns.cpu_ms_per_second('with runs'):.0f} ms/s with them"
    )


def main() -> None:
    busy = psutil.cpu_percent(interval=3)
    print(f"machine: {psutil.cpu_count()} CPUs, {busy:.0f}% busy with other work just before")
    print(
        f"{POLLERS} pollers per route, each every {EVERY_SECONDS:g} s; the settings compared take turns "
        f"({SLICES} x {SLICE_SECONDS} s each per round); 8 simulated GPUs sampled every {SAMPLE_SECONDS} s"
    )
    with tempfile.TemporaryDirectory() as tmp:
        print(f"GPU route against jupyter-resource-usage's {BASELINE} (same server, taking turns):")
        against_baseline(Path(tmp))
        print("GPU route without and with Experiment-panel pollers (100 runs of the notebook, the newest RUNNING):")
        with_experiment_pollers(Path(tmp))
    print(f"machine: {psutil.cpu_percent(interval=3):.0f}% busy just after")


if __name__ == "__main__":
    main()
