"""Node actors started ahead of their driver, on a real Ray cluster on loopback: another driver takes them, and once it
is killed they end with it, as actors it had placed itself would (the path of a job's first attempt: the submitter
starts its nodes while Ray starts the job's supervisor; the Ray Jobs tests run it end to end)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time

import pytest

from jupyter_air.cluster import prestart
from jupyter_air.cluster.connect import connect
from jupyter_air.cluster.keeper import PARKED_NAMESPACE
from jupyter_air.workloads.supervisor.agent import WorkloadAgent

pytestmark = [pytest.mark.ray, pytest.mark.usefixtures("ray_driver"), pytest.mark.timeout(600)]

#: A driver that takes the actors recorded in ``argv[2]`` on the cluster at ``argv[1]``, says so, and waits.
TAKER = textwrap.dedent(
    """\
    import sys, time
    from pathlib import Path
    from jupyter_air.cluster import prestart
    from jupyter_air.cluster.connect import connect

    connect(sys.argv[1])
    group = prestart.take(Path(sys.argv[2]), {"CPU": 1}, lambda hosts: None)
    print("taken" if group is not None else "not taken", [info.pid for info in group.infos], flush=True)
    time.sleep(600)
    """
)


def _alive(name: str) -> bool:
    import ray

    try:
        ray.get_actor(name, namespace=PARKED_NAMESPACE)
    except ValueError:
        return False
    return True


def test_actors_started_ahead_are_taken_by_their_driver_and_end_when_it_is_killed(ray_cluster, tmp_path):
    connect(ray_cluster.address)
    record = tmp_path / "started.json"
    name = f"air-job-test-{time.time_ns()}"
    names = [f"{name}-{node}" for node in range(2)]
    # Given 2 node actors started for a driver yet to come (by this process, as a submitter)
    prestart.prestart(WorkloadAgent, 2, {"CPU": 1}, name, record)
    assert record.exists() and all(_alive(name) for name in names)
    # When another driver takes them
    taker = subprocess.Popen(
        [sys.executable, "-c", TAKER, ray_cluster.address, str(record)], stdout=subprocess.PIPE, text=True
    )
    try:
        said = taker.stdout.readline()
        # Then it got both, and the record is gone (nobody else takes them)
        assert said.startswith("taken"), said
        assert not record.exists()
        # And when that driver is killed, the actors end within seconds, though they are detached
        taker.kill()
        taker.wait(30)
        deadline = time.monotonic() + 60
        while any(_alive(name) for name in names):
            assert time.monotonic() < deadline, "the actors outlived the driver that had taken them"
            time.sleep(0.5)
    finally:
        if taker.poll() is None:
            taker.kill()
            taker.wait()
        prestart.drop(record)
