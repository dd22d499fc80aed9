"""Scale-out on a local Ray cluster: a no-op call on 2 nodes against Ray Train and one node; GPU fan-in, 3 nodes vs 1.

Everything runs on this machine's loopback (a head and worker nodes of ``ray.cluster_utils.Cluster``), in one
process, side by side: each round runs every variant once, so load from elsewhere hits them alike.
Needs ``pip install "ray[train]==2.60.0"`` for the Ray Train column.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import logging
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

import cloudpickle
from ray_cluster import LocalCluster  # sets the environment Ray reads before Ray is imported

cloudpickle.register_pickle_by_value(sys.modules[__name__])  # Ray Train's workers cannot import this module

#: Warm rounds of the cheap variants; Ray Train takes about 12 s a call, so it gets fewer.
ROUNDS = 10
TRAIN_ROUNDS = 3
FAN_IN_REQUESTS = 50


def noop(*_) -> None:
    """The function every launcher runs: nothing, so only the launch is measured."""


def _quietly(action):
    def run():
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            action()

    return run


def _air(**options):
    from jupyter_air import distributed

    return _quietly(distributed(noop, experiment="bench-cluster", log_system_metrics=False, **options).distributed)


def _ray_train(storage: Path):
    from ray.train import RunConfig, ScalingConfig
    from ray.train.torch import TorchTrainer

    counter = iter(range(10**6))

    def fit():
        TorchTrainer(
            noop,
            scaling_config=ScalingConfig(num_workers=2, use_gpu=False, placement_strategy="STRICT_SPREAD"),
            run_config=RunConfig(storage_path=str(storage), name=f"bench-{next(counter)}"),
        ).fit()

    return _quietly(fit)


def _timed(action, rounds: int) -> list[float]:
    times = []
    for _ in range(rounds):
        started = time.perf_counter()
        action()
        times.append(time.perf_counter() - started)
    return times


def launch_overhead(cluster: LocalCluster, storage: Path) -> None:
    os.environ["AIR_RAY_ADDRESS"] = cluster.address
    ours, train, one = (
        ".distributed(nodes=2, gpus=1), 2 nodes x 1 rank",
        "Ray Train TorchTrainer, 2 workers STRICT_SPREAD",
        "today: .distributed(gpus=2), one node, 2 ranks",
    )
    actions = {ours: _air(nodes=2, gpus=1), train: _ray_train(storage), one: _air(gpus=2)}
    for action in actions.values():
        action()  # warm-up: fork servers, actors, MLflow's database
    times: dict[str, list[float]] = {label: [] for label in actions}
    for round_ in range(ROUNDS):
        for label, action in actions.items():
            if label != train or round_ < TRAIN_ROUNDS:
                times[label].extend(_timed(action, 1))
    medians = {label: statistics.median(values) for label, values in times.items()}
    print(f"No-op call, warm: {ROUNDS} rounds ({TRAIN_ROUNDS} for Ray Train), every variant once per round.")
    print(f"  {'':<52} {'median':>9}  {'vs Ray Train':>12}  {'vs one node':>11}")
    for label, seconds in medians.items():
        versus = f"{seconds / medians[train]:11.3f}x  {seconds / medians[one]:10.2f}x"
        print(f"  {label:<52} {seconds * 1000:7.0f} ms  {versus}")
    ratio = medians[ours] / medians[train]
    verdict = "meets" if ratio <= 1 else "misses"
    print(f".distributed(nodes=2) / TorchTrainer: {ratio:.3f}x ({verdict} the goal: not slower)")
    print(f".distributed(nodes=2) / today's one-node .distributed(): {medians[ours] / medians[one]:.2f}x")


def _fan_in_ms(address: str) -> tuple[float, int]:
    """Median milliseconds of GpuService.snapshot (what GET jupyter-air/gpu runs) over every node; node count."""
    from jupyter_air.gpu.cluster import ClusterGpu
    from jupyter_air.gpu.sampler import Sampler
    from jupyter_air.gpu.service import GpuService
    from jupyter_air.gpu.sources import open_source

    cluster = ClusterGpu(address, "simulated", 2, 1.0, 600.0, 600.0)
    service = GpuService(Sampler(lambda: open_source("simulated", 2), 1.0, 600.0, 600.0), cluster=cluster)

    async def measure() -> tuple[float, int]:
        payload = await service.snapshot()
        deadline = time.monotonic() + 120
        while any(n["state"] != "live" for n in payload["nodes"]) and time.monotonic() < deadline:
            await asyncio.sleep(0.2)  # every node's sampler actor has started
            payload = await service.snapshot()
        return await _median_poll_ms(service, payload), len(payload["nodes"])

    try:
        return asyncio.run(measure())
    finally:
        cluster.close()


def _local_ms() -> float:
    from jupyter_air.gpu.sampler import Sampler
    from jupyter_air.gpu.service import GpuService
    from jupyter_air.gpu.sources import open_source

    service = GpuService(Sampler(lambda: open_source("simulated", 2), 1.0, 600.0, 600.0))

    async def measure() -> float:
        return await _median_poll_ms(service, await service.snapshot())

    return asyncio.run(measure())


async def _median_poll_ms(service, payload: dict) -> float:
    """The median milliseconds of the panel's poll (``since`` = the newest sample of ``payload``)."""
    times = []
    for _ in range(FAN_IN_REQUESTS):
        started = time.perf_counter()
        await service.snapshot(payload["timestamps_ms"][-1])
        times.append(time.perf_counter() - started)
    return statistics.median(times) * 1000


def fan_in(cluster: LocalCluster) -> None:
    one, one_count = _fan_in_ms(cluster.address)
    for _ in range(2):
        cluster.add_node(gpus=0, cpus=1)
    cluster.wait_for_nodes()
    three, three_count = _fan_in_ms(cluster.address)
    local = _local_ms()
    print(f"GPU route fan-in (GpuService.snapshot with since=newest), median of {FAN_IN_REQUESTS}:")
    print(f"  no cluster (this server's sampler): {local:6.2f} ms")
    print(f"  {one_count} node(s):                          {one:6.2f} ms")
    print(f"  {three_count} node(s):                          {three:6.2f} ms  ({three / one:.2f}x of 1 node)")


def main() -> None:
    logging.getLogger("ray").setLevel(logging.ERROR)
    with tempfile.TemporaryDirectory(prefix="air-bench-") as tmp:
        folder = Path(tmp)
        os.environ["AIR_HOME"] = str(folder / "home")
        os.environ.pop("MLFLOW_TRACKING_URI", None)
        cluster = LocalCluster()
        try:
            fan_in(cluster)  # the head alone, then with 2 more nodes
        finally:
            cluster.shutdown()
        cluster = LocalCluster()
        try:
            for _ in range(2):
                cluster.add_node(gpus=2, cpus=2)
            cluster.wait_for_nodes()
            launch_overhead(cluster, folder / "ray-train")
        finally:
            cluster.shutdown()


if __name__ == "__main__":
    main()
