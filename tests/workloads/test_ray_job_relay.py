"""A Ray Job's supervisor forked from AIR_HOME's zygote, on a real Ray cluster on loopback: the Ray Job's entrypoint
relays Ray's stop to it, and once Ray has killed the entrypoint the supervisor stops the job itself. (Without a zygote
the supervisor is the entrypoint: the other Ray Jobs tests.)"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import psutil
import pytest
from workload_helpers import nothing_left, ray_job_info, write_workload

from jupyter_air.training import zygote_client
from jupyter_air.workloads.state.store import JobStore

pytestmark = [pytest.mark.ray, pytest.mark.usefixtures("ray_driver"), pytest.mark.timeout(900)]

SLEEPER = 'echo "started $NODE_RANK"; sleep 600'


@pytest.fixture
def zygote(air) -> int:
    """AIR_HOME's zygote for the environment `air` runs in, as a Jupyter server starts it: its PID."""
    warm = "from jupyter_air.training import zygote_client; zygote_client.warm()"
    subprocess.run([sys.executable, "-c", warm], env=air.env, check=True)
    name = zygote_client.key(air.env)
    deadline = time.monotonic() + 300
    while (held := zygote_client.holder(zygote_client.lock_path(name))) is None or not zygote_client.socket_path(
        name
    ).exists():
        assert time.monotonic() < deadline, "no zygote came up"
        time.sleep(0.2)
    return held[0]


def _running_on_both_nodes(air, tmp_path, ray_cluster) -> tuple[str, psutil.Process]:
    path = write_workload(tmp_path, command=SLEEPER, compute={"num_accelerators": 0, "num_nodes": 2})
    job_run_id = air.submit(path, "--ray-address", ray_cluster.address)
    air.wait(job_run_id, until=lambda job: "started" in air("logs", job_run_id, "--node", "1").stdout, timeout=420)
    return job_run_id, psutil.Process(JobStore(air.home).get(job_run_id).supervisor_pid)


def _entrypoint(job_run_id: str) -> psutil.Process:
    """The Ray Job's entrypoint: the process whose command line names the job."""
    (found,) = [p for p in psutil.process_iter(["cmdline"]) if job_run_id in " ".join(p.info["cmdline"] or [])]
    return found


def test_the_entrypoint_relays_rays_stop_to_a_supervisor_forked_from_the_zygote(
    ray_cluster, air, tmp_path, mlflow_client, zygote
):
    # Given a 2-node job submitted with `air run` while AIR_HOME's zygote runs, its command started on both nodes
    job_run_id, supervisor = _running_on_both_nodes(air, tmp_path, ray_cluster)
    # Then its supervisor was forked from the zygote, and the Ray Job's entrypoint only relays to it
    assert supervisor.ppid() == zygote
    assert _entrypoint(job_run_id).pid != supervisor.pid
    log = (air.home / "jobs" / job_run_id / "supervisor.log").read_text()
    assert f"supervisor {supervisor.pid} forked warm" in log

    # When it is canceled (Ray sends SIGTERM to the entrypoint)
    (canceled,) = air.json("cancel", job_run_id)

    # Then the supervisor got it: it stopped every node itself, the attempt's run is KILLED, Ray says STOPPED
    assert canceled["status"] == "CANCELED", canceled
    job = air.wait(job_run_id, lambda j: j["ray_job"]["status"] != "RUNNING")
    (attempt,) = job["attempts"]
    assert [n["exit_code"] for n in attempt["nodes"]] == [-signal.SIGTERM, -signal.SIGTERM]
    assert mlflow_client.get_run(attempt["mlflow_run_id"]).info.status == "KILLED"
    assert ray_job_info(ray_cluster, job_run_id).status == "STOPPED"
    supervisor.wait(timeout=30)  # it records the job's end, then exits: the zygote reaps it a moment later
    assert nothing_left(job_run_id) == [] and not supervisor.is_running()


def test_a_supervisor_whose_entrypoint_ray_killed_stops_the_job(ray_cluster, air, tmp_path, mlflow_client, zygote):
    # Given a forked supervisor running a 2-node job
    job_run_id, supervisor = _running_on_both_nodes(air, tmp_path, ray_cluster)
    assert supervisor.ppid() == zygote
    # When Ray kills the job's entrypoint (as it does 30 s after a stop, or when its job supervisor actor dies)
    os.kill(_entrypoint(job_run_id).pid, signal.SIGKILL)
    # Then the supervisor stops both nodes and ends the job and its run, and nothing of it is left
    job = air.wait(job_run_id, timeout=120)
    assert job["status"] == "CANCELED", job
    (attempt,) = job["attempts"]
    assert mlflow_client.get_run(attempt["mlflow_run_id"]).info.status == "KILLED"
    supervisor.wait(timeout=30)  # it records the job's end, then exits: the zygote reaps it a moment later
    assert nothing_left(job_run_id) == [] and not supervisor.is_running()
