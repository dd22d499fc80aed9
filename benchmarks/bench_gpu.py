"""GPU sampler and REST API: tick cost, GET latency under concurrent pollers, payload size, server CPU ratio."""

from __future__ import annotations

import asyncio
import gzip
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

TOKEN = "bench-token"


def _percentile(values, q):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def tick_cost(gpus: int, ticks: int = 2000) -> tuple[float, float]:
    """Median microseconds per sampler tick, total and with the fake NVML's own time removed."""
    from fake_pynvml import FakeGpu, FakeNvml

    from jupyter_air.gpu.history import History
    from jupyter_air.gpu.host import read_host
    from jupyter_air.gpu.nvml import NvmlSource

    nvml = FakeNvml([FakeGpu(processes=[(os.getpid(), 1 << 30)]) for _ in range(gpus)])
    sys.modules["pynvml"] = nvml
    source = NvmlSource()
    source.open()
    history = History(720)
    totals, nvml_only = [], []
    for _ in range(ticks):
        started = time.perf_counter()
        history.append(int(time.time() * 1000), source.read(), read_host())
        totals.append(time.perf_counter() - started)
    # The fake's own cost: the same NVML calls without jupyter_air around them.
    for _ in range(ticks):
        started = time.perf_counter()
        for handle in range(gpus):
            nvml.nvmlDeviceGetUtilizationRates(handle)
            nvml.nvmlDeviceGetMemoryInfo(handle)
            nvml.nvmlDeviceGetTemperature(handle, 0)
            nvml.nvmlDeviceGetPowerUsage(handle)
            nvml.nvmlDeviceGetComputeRunningProcesses(handle)
        nvml_only.append(time.perf_counter() - started)
    del sys.modules["pynvml"]
    total = statistics.median(totals) * 1e6
    return total, total - statistics.median(nvml_only) * 1e6


def payload_sizes(gpus: int = 8, samples: int = 720) -> tuple[int, int, int, int, float]:
    """Bytes (raw, gzip) of a one-sample ``since`` poll and of the full history; ms to build the full one."""
    from jupyter_air.gpu.history import History
    from jupyter_air.gpu.host import read_host
    from jupyter_air.gpu.sampler import Sampler
    from jupyter_air.gpu.service import GpuService
    from jupyter_air.gpu.simulated import SimulatedSource

    source = SimulatedSource(gpus)
    source.open()
    sampler = Sampler(lambda: source, 10, samples * 10, 300)
    sampler.sample_now()  # opens the source; the history is then filled with older samples
    history = History(samples)
    now = int(time.time() * 1000)
    for k in range(samples):
        history.append(now - (samples - k) * 10_000, source.read(), read_host())
    sampler._history = history
    service = GpuService(sampler)
    started = time.perf_counter()
    full = json.dumps(asyncio.run(service._payload(sampler.snapshot(None)))).encode()
    build_ms = (time.perf_counter() - started) * 1e3
    poll = json.dumps(asyncio.run(service._payload(sampler.snapshot(now - 15_000)))).encode()
    return len(poll), len(gzip.compress(poll)), len(full), len(gzip.compress(full)), build_ms


def naming_ms(children: int = 8, gpus: int = 4) -> float:
    """Median milliseconds to name the kernel of ``children`` × ``gpus`` GPU processes, all children of a kernel
    (this process): what the server does once per sample, off the event loop."""
    from jupyter_air.gpu.attribution import attribute
    from jupyter_air.gpu.types import GpuProcess

    sleeping = [subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"]) for _ in range(children)]
    try:
        processes = [GpuProcess(g, child.pid, "python", 1 << 30) for child in sleeping for g in range(gpus)]
        times = []
        for _ in range(20):
            started = time.perf_counter()
            attribute(processes, {os.getpid(): "kernel"}, {"kernel": "train.ipynb"})
            times.append(time.perf_counter() - started)
        return statistics.median(times) * 1e3
    finally:
        for child in sleeping:
            child.kill()
            child.wait()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(
    gpus: int, interval: float, args: tuple[str, ...] = (), env: dict[str, str] | None = None
) -> tuple[subprocess.Popen, str]:
    """A Jupyter server with ``gpus`` simulated GPUs sampled every ``interval`` s (more ``args`` and ``env``)."""
    port = _free_port()
    env = {**(os.environ if env is None else env), "JUPYTER_AIR_GPU_SOURCE": "simulated"}
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "jupyter_server",
            f"--port={port}",
            "--ServerApp.port_retries=0",
            f"--IdentityProvider.token={TOKEN}",
            "--ServerApp.open_browser=False",
            "--ServerApp.allow_root=True",
            f"--JupyterAir.simulated_gpus={gpus}",
            f"--JupyterAir.sample_interval_seconds={interval}",
            "--ServerApp.log_level=WARN",
            *args,
        ],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        cwd=ROOT,
    )
    url = f"http://127.0.0.1:{port}/jupyter-air/gpu"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return proc, url
        except OSError:
            time.sleep(0.2)
    proc.kill()
    raise RuntimeError("benchmark server did not start within 60 s")


async def _pollers(url: str, count: int, requests_each: int, pause: float) -> list[float]:
    """``count`` pollers, each doing ``requests_each`` GETs; on the GPU route with ``since`` = its newest sample."""
    from tornado.httpclient import AsyncHTTPClient

    client = AsyncHTTPClient(max_clients=count + 1)
    headers = {"Authorization": f"token {TOKEN}"}
    gpu_route = url.endswith("/gpu")
    first = json.loads((await client.fetch(url, headers=headers)).body)
    latencies: list[float] = []

    async def poller():
        newest = first["timestamps_ms"][-1] if gpu_route else None
        for _ in range(requests_each):
            started = time.perf_counter()
            body = json.loads((await client.fetch(f"{url}?since={newest}" if gpu_route else url, headers=headers)).body)
            latencies.append(time.perf_counter() - started)
            if gpu_route and body["timestamps_ms"]:
                newest = body["timestamps_ms"][-1]
            await asyncio.sleep(pause)

    await asyncio.gather(*(poller() for _ in range(count)))
    return latencies


def latency(url: str, count: int, requests_each: int) -> tuple[float, float]:
    values = asyncio.run(_pollers(url, count, requests_each, 0.0))
    return statistics.median(values) * 1e3, _percentile(values, 0.99) * 1e3


def server_cpu_seconds(proc: subprocess.Popen, url: str, pollers: int, window_s: float) -> float:
    """Server CPU seconds while ``pollers`` clients each poll once a second for ``window_s`` seconds."""
    server = psutil.Process(proc.pid)
    before = server.cpu_times()
    asyncio.run(_pollers(url, pollers, int(window_s), 1.0))
    after = server.cpu_times()
    return (after.user - before.user) + (after.system - before.system)


def main() -> None:
    for gpus in (1, 8):
        total, own = tick_cost(gpus)
        print(f"sampler tick, {gpus} fake GPU(s): {total:.0f} us per tick, {own:.0f} us excluding NVML's own time")
    poll, poll_gz, full, full_gz, build_ms = payload_sizes()
    print(
        f"payload, 8 GPUs: 10-second since poll {poll} B ({poll_gz} B gzip); "
        f"full 2-hour history (720 samples) {full / 1024:.0f} KiB ({full_gz / 1024:.0f} KiB gzip), "
        f"built and serialised in {build_ms:.1f} ms"
    )
    print(
        f"naming the notebook of 32 GPU processes (8 children of a kernel on 4 GPUs each): {naming_ms():.1f} ms, "
        "once per sample on a worker thread"
    )
    # An AIR_HOME of its own: one with a tracking store would start the MLflow UI's processes during the run.
    home = tempfile.TemporaryDirectory()
    proc, url = start_server(gpus=8, interval=1.0, env={**os.environ, "AIR_HOME": home.name})
    try:
        for count, each in ((1, 200), (100, 10)):
            median, p99 = latency(url, count, each)
            print(f"GET ?since latency, {count} concurrent poller(s): median {median:.2f} ms, p99 {p99:.2f} ms")
        window = 15.0
        one = server_cpu_seconds(proc, url, 1, window)
        twenty = server_cpu_seconds(proc, url, 20, window)
        status = server_cpu_seconds(proc, url.replace("/jupyter-air/gpu", "/api/status"), 20, window)
        print(
            f"server CPU over {window:.0f} s (8 simulated GPUs sampled every 1 s, each poller polling every 1 s): "
            f"1 poller {one:.2f} s, 20 pollers {twenty:.2f} s, ratio {twenty / one:.2f}x (baseline: 1 poller)"
        )
        print(
            f"  for scale, 20 pollers of jupyter_server's own /api/status (no GPU work) cost {status:.2f} s: "
            f"the GPU route costs {twenty / status:.2f}x the server's cheapest authenticated route"
        )
    finally:
        proc.terminate()
        proc.wait(10)
        home.cleanup()


if __name__ == "__main__":
    main()
