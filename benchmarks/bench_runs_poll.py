"""The Experiment panel's poll (``GET runs?notebook&since`` that finds nothing new) against the GPU panel's poll
(``GET gpu?since``, the baseline), in server CPU: 200 polls in a row on a fresh server, the first included (it
imports MLflow and opens the store), and per poll once the server is warm."""

from __future__ import annotations

import asyncio
import tempfile
import time
from pathlib import Path

import psutil

from benchmarks.baseline import stop_resident_servers
from benchmarks.bench_experiment import _get
from benchmarks.bench_polls import Routes, _new_store, _settle, _start, _stop, cpu_ms_per_get
from jupyter_air.server.handlers import MAX_EPOCH_MS

#: Polls in a row on a fresh server.
POLLS = 200


def cpu_ms(server: psutil.Process, url: str, count: int) -> float:
    """Server CPU milliseconds of ``count`` GETs of ``url`` in a row."""

    async def run() -> None:
        for _ in range(count):
            await _get(url)

    before = server.cpu_times()
    asyncio.run(run())
    after = server.cpu_times()
    return ((after.user - before.user) + (after.system - before.system)) * 1000


def main() -> None:
    print(f"machine: {psutil.cpu_count()} CPUs, {psutil.cpu_percent(interval=3):.0f}% busy with other work just before")
    with tempfile.TemporaryDirectory() as tmp:
        home, root, since = _new_store(Path(tmp), "runs-poll", runs=True)
        proc, base = _start(home, root)
        try:
            routes = Routes(base, since)
            _settle(proc, routes)
            server, gpu = psutil.Process(proc.pid), f"{routes.gpu}?since={MAX_EPOCH_MS}"
            gpu_fresh = cpu_ms(server, gpu, POLLS) / POLLS
            first = cpu_ms(server, routes.runs, 1)
            runs_fresh = (first + cpu_ms(server, routes.runs, POLLS - 1)) / POLLS
            print(
                f"{POLLS} polls in a row on a fresh server (100 runs of the notebook, the newest RUNNING), server CPU "
                f"per poll: runs?notebook&since {runs_fresh:.2f} ms, of which the first poll {first:.0f} ms "
                f"(imports MLflow, opens the store); baseline gpu?since {gpu_fresh:.2f} ms; "
                f"ratio {runs_fresh / gpu_fresh:.1f}x"
            )
            urls = {"version (the server's floor)": routes.version, "gpu?since (baseline)": gpu, "runs": routes.runs}
            costs = cpu_ms_per_get(proc, urls, count=POLLS, blocks=5)
            print(f"warm, server CPU per GET (median of 5 x {POLLS} in a row): {costs}")
            medians = {part.split()[0]: float(part.split()[-2]) for part in costs.split(", ")}
            print(f"  ratio runs / gpu (warm): {medians['runs'] / medians['gpu?since']:.2f}x")
        finally:
            _stop(proc)
            stop_resident_servers(Path(tmp))  # AIR_HOME's MLflow server, when writing the store started it
    print(f"machine: {psutil.cpu_percent(interval=3):.0f}% busy just after; {time.strftime('%Y-%m-%d %H:%M')}")


if __name__ == "__main__":
    main()
