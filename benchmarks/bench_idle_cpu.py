"""CPU that what is kept warm for one user spends while nothing runs, on a 3-node loopback Ray cluster (a head and 2
workers, no GPUs): after a 3-node call driven by this process (its node actors kept for the next call) and a 2-node
remote call (its supervisor forked from AIR_HOME's zygote, its node actors parked for the next remote call, with their
keeper), with AIR_HOME's MLflow server answering, every process is sampled over ``IDLE_SECONDS`` of idleness. The
baseline: Ray's own processes on the same nodes over the same time.
"""

from __future__ import annotations

import contextlib
import io
import os
import sys
import tempfile
import time
from pathlib import Path

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from ray_cluster import AGENT_ENV, CLUSTER_ENV, GUARD_ENV, LocalCluster, free_parked  # sets Ray's environment first

from benchmarks.baseline import stop_resident_servers

IDLE_SECONDS = 60.0
#: What is ours, by how it is found: the residents by their records, the rest by the markers they carry.
GROUPS = (
    "AIR_HOME's MLflow server",
    "AIR_HOME's zygote",
    "kept and parked node actors, their fork servers and guards",
    "the parked actors' keeper",
)


def noop() -> None:
    """The calls' function: nothing."""


def _cpu_seconds(processes: list[psutil.Process]) -> dict[int, float]:
    found = {}
    for proc in processes:
        with contextlib.suppress(psutil.Error):
            times = proc.cpu_times()
            found[proc.pid] = times.user + times.system + times.children_user + times.children_system
    return found


def _ours(home: Path) -> dict[str, list[psutil.Process]]:
    from jupyter_air.tracking import resident
    from jupyter_air.training import zygote_client

    server = resident.read(resident.record_path(resident.embedded_uri(home), home))
    mlflow = [psutil.Process(server.pid), *psutil.Process(server.pid).children(recursive=True)]
    zygotes = [psutil.Process(held[0]) for lock in home.glob("forks-*.pid") if (held := zygote_client.holder(lock))]
    agents, keepers = [], []
    for proc in psutil.process_iter(["cmdline"]):
        with contextlib.suppress(psutil.Error):
            env, line = proc.environ(), " ".join(proc.info["cmdline"] or [])
            if AGENT_ENV in env or GUARD_ENV in env or line.startswith("ray::Train"):
                agents.append(proc)
            elif "jupyter_air.cluster.keeper" in line:
                keepers.append(proc)
    return dict(zip(GROUPS, (mlflow, zygotes, agents, keepers), strict=True))


def _ray_own(root: str, ours: set[int]) -> list[psutil.Process]:
    found = []
    for proc in psutil.process_iter():
        with contextlib.suppress(psutil.Error):
            if proc.environ().get(CLUSTER_ENV) == root and proc.pid not in ours and proc.pid != os.getpid():
                found.append(proc)
    return found


def main() -> None:
    import cloudpickle

    from jupyter_air import distributed
    from jupyter_air.training import zygote_client

    cloudpickle.register_pickle_by_value(sys.modules[__name__])  # the nodes cannot import this module
    with tempfile.TemporaryDirectory(prefix="air-bench-idle-") as tmp:
        home = Path(tmp) / "home"
        os.environ["AIR_HOME"] = str(home)
        os.environ.pop("MLFLOW_TRACKING_URI", None)
        cluster = LocalCluster()
        try:
            for _ in range(2):
                cluster.add_node(gpus=0, cpus=2)
            cluster.wait_for_nodes()
            zygote_client.warm()
            call = distributed(noop, nodes=3, ray_address=cluster.address, experiment="bench-idle")
            remote = distributed(noop, nodes=2, ray_address=cluster.address, experiment="bench-idle")
            with contextlib.redirect_stdout(io.StringIO()):
                call.distributed()  # its actors are kept for the next call of this shape
                remote.distributed(remote=True)  # its actors are parked for the next remote call of this shape
            groups = _ours(home)
            ours = {proc.pid for procs in groups.values() for proc in procs}
            groups["Ray's own processes (baseline)"] = _ray_own(str(cluster.root), ours)
            groups["this process (the notebook's kernel)"] = [psutil.Process()]
            names = {}
            for proc in (proc for procs in groups.values() for proc in procs):
                with contextlib.suppress(psutil.Error):
                    names[proc.pid] = " ".join(proc.cmdline())
            before = {name: _cpu_seconds(procs) for name, procs in groups.items()}
            time.sleep(IDLE_SECONDS)
            after = {name: _cpu_seconds(procs) for name, procs in groups.items()}
        finally:
            free_parked(cluster.address)  # and their keeper
            cluster.shutdown()
            stop_resident_servers(Path(tmp))
    print(f"CPU-seconds per idle minute, one user, 3-node loopback cluster, measured over {IDLE_SECONDS:.0f} s:")
    for name in before:
        spent = sum(after[name].get(pid, seconds) - seconds for pid, seconds in before[name].items())
        print(f"  {name} ({len(before[name])} processes): {spent * 60 / IDLE_SECONDS:.2f}")
        for pid, seconds in before[name].items():
            one = after[name].get(pid, seconds) - seconds
            print(f"      {names.get(pid, '?')[:100]}: {one * 60 / IDLE_SECONDS:.2f}")
