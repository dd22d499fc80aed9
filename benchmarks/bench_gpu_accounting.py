"""GPU accountability: what a run's energy meter and the idle GPU holder check add to a sampler tick (8 GPUs)."""

from __future__ import annotations

import os
import statistics
import sys
import time

from benchmarks.bench_gpu import ROOT

sys.path.insert(0, str(ROOT / "tests"))

GPUS, KERNELS = 8, 20


def _median_us(function, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        function()
        times.append(time.perf_counter() - started)
    return statistics.median(times) * 1e6


def costs(repeats: int = 2000) -> dict[str, float]:
    """Median microseconds: a sampler tick (the baseline), a run's energy meter per sample (counter and integral
    paths), and one idle-holder check; 8 fake GPUs, 20 kernels each holding memory on one GPU, plus one process
    that is no kernel (its ancestors are looked up, as for another user's process)."""
    from fake_pynvml import FakeGpu, FakeNvml

    from jupyter_air.gpu.history import History
    from jupyter_air.gpu.host import read_host
    from jupyter_air.gpu.idle import IdleHolders, KernelView
    from jupyter_air.gpu.nvml import NvmlSource
    from jupyter_air.tracking.energy import EnergyMeter

    kernel_pids = [1_000_000 + k for k in range(KERNELS)]  # listed kernels: found without a process lookup
    gpus = [FakeGpu(utilization_percent=0, processes=[]) for _ in range(GPUS)]
    for k, pid in enumerate(kernel_pids):
        gpus[k % GPUS].processes.append((pid, 2 << 30))
    gpus[0].processes.append((os.getpid(), 1 << 30))
    nvml = FakeNvml(gpus)
    sys.modules["pynvml"] = nvml
    try:
        source = NvmlSource()
        source.open()
        history = History(720)
        tick = _median_us(lambda: history.append(int(time.time() * 1000), source.read(), read_host()), repeats)
        reading = source.read()
        meter = EnergyMeter(source, list(range(GPUS)))

        def energy():
            meter.observe(reading, time.monotonic())
            meter.joules()

        counter = _median_us(energy, repeats)
        for gpu in gpus:
            gpu.energy_error = "NotSupported"
        meter = EnergyMeter(source, list(range(GPUS)))
        integral = _median_us(energy, repeats)
        holders = IdleHolders(0.001, 1024, time.time() - 3600)
        kernels = [
            KernelView(f"k{k}", pid, f"n{k}.ipynb", time.time() - 3600, False) for k, pid in enumerate(kernel_pids)
        ]
        samples = [(int(time.time() * 1000), reading)]
        check = _median_us(lambda: holders.check(samples, kernels, time.time()), repeats)
        first = _median_us(lambda: IdleHolders(0.001, 1024, 0).check(samples, kernels, time.time()), repeats // 10)
        found = len(holders.holders())
    finally:
        del sys.modules["pynvml"]
    return {"tick": tick, "counter": counter, "integral": integral, "check": check, "first": first, "found": found}


def main() -> None:
    c = costs()
    tick = c["tick"]
    print(f"sampler tick, {GPUS} fake GPUs (baseline): {tick:.0f} us")
    print(
        f"run energy meter per sample: counter path {c['counter']:.0f} us ({c['counter'] / tick:.1%} of a tick), "
        f"integral path {c['integral']:.0f} us ({c['integral'] / tick:.1%}); it runs in the run's system-metrics "
        "thread, once per sample"
    )
    per_tick = c["check"] / 6  # one check a minute against a tick every 10 s (the defaults)
    print(
        f"idle-holder check, {KERNELS} kernels ({c['found']:.0f} found idle): {c['check']:.0f} us per check "
        f"({c['check'] / tick:.1%} of a tick); at the defaults (a check a minute, a tick every 10 s) "
        f"{per_tick:.0f} us per tick, {per_tick / tick:.1%}"
    )
    print(
        f"  the first check after a kernel starts or stops looks every process up again: {c['first']:.0f} us "
        f"({c['first'] / tick:.1%} of a tick)"
    )


if __name__ == "__main__":
    main()
