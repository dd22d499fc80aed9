"""`air run` on two nodes of a real Ray cluster on loopback: per-node logs, torchrun unchanged, cancel, a retry."""

from __future__ import annotations

import contextlib
import os
import sys
import textwrap
import threading
import time
from pathlib import Path

import psutil
import pytest
from ray_cluster import actor_processes
from workload_helpers import write_workload

from jupyter_air import distributed
from jupyter_air.training import release_nodes
from jupyter_air.training.forkserver_client import Launcher
from jupyter_air.training.gpu_claim import GpusBusy
from jupyter_air.workloads.state.ledger import GpuLedger
from jupyter_air.workloads.state.store import JobStore

pytestmark = [pytest.mark.ray, pytest.mark.usefixtures("ray_driver")]

ALL_REDUCE = """
import os
import torch
import torch.distributed as dist

dist.init_process_group("gloo")
value = torch.tensor([float(dist.get_rank() + 1)])
dist.all_reduce(value)
print(f"node {os.environ['NODE_RANK']} rank {dist.get_rank()} of {dist.get_world_size()} sum {value.item()}")
print(f"gpus {os.environ['CUDA_VISIBLE_DEVICES']} master {os.environ['MASTER_ADDR']}")
dist.destroy_process_group()
"""


def job_processes(job_run_id: str) -> list[psutil.Process]:
    """Live processes of a job's attempts on any node (each carries AIR_JOB_RUN_ID)."""
    found = []
    for proc in psutil.process_iter():
        with contextlib.suppress(psutil.Error):
            if proc.environ().get("AIR_JOB_RUN_ID") == job_run_id and proc.status() != psutil.STATUS_ZOMBIE:
                found.append(proc)
    return found


def nothing_left(job_run_id: str, timeout: float = 20.0) -> bool:
    deadline = time.monotonic() + timeout
    while (job_processes(job_run_id) or actor_processes("WorkloadAgent")) and time.monotonic() < deadline:
        time.sleep(0.2)
    return not job_processes(job_run_id) and not actor_processes("WorkloadAgent")


def test_torchrun_on_two_nodes_with_logs_per_node(ray_cluster, air, tmp_path, mlflow_client):
    # Given a workload that runs torchrun on 2 nodes of the cluster, 2 GPUs each
    (tmp_path / "reduce.py").write_text(ALL_REDUCE)
    path = write_workload(
        tmp_path,
        command=(
            "torchrun --nnodes $NUM_NODES --node_rank $NODE_RANK --nproc_per_node 1 "
            "--master_addr $MASTER_ADDR --master_port $MASTER_PORT reduce.py"
        ),
        compute={"num_accelerators": 4, "num_nodes": 2},
        # torchrun from this environment, gloo on loopback
        env_variables={"PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}", "GLOO_SOCKET_IFNAME": "lo"},
    )

    # When it runs on the cluster
    job_run_id = air.submit(path, "--ray-address", ray_cluster.address)
    job = air.wait(job_run_id, timeout=180)

    # Then it succeeds; every node's output is its own, torchrun saw both nodes (world of 2), each node had its GPUs
    assert job["status"] == "SUCCEEDED", (job["error"], job["attempts"])
    assert job["num_nodes"] == 2
    node_1 = air("logs", job_run_id, "--node", "1", check=True).stdout
    assert "node 1 rank 1 of 2 sum 3.0" in node_1 and "gpus 0,1 master 127.0.0.1" in node_1
    assert "node 0 rank 0 of 2 sum 3.0" in air("logs", job_run_id, check=True).stdout
    # a node out of range is refused with the node count
    out_of_range = air("logs", job_run_id, "--node", "2")
    assert out_of_range.returncode == 2 and "run has 2 node(s)" in out_of_range.stderr
    # `air get` shows where each node ran and how it ended
    (attempt,) = job["attempts"]
    placed = [(n["node"], n["ip"], n["exit_code"]) for n in attempt["nodes"]]
    assert placed == [(0, "127.0.0.1", 0), (1, "127.0.0.1", 0)]
    assert "Ray cluster at" in air("get", job_run_id, check=True).stdout
    # --download-to gets every node
    listed = air("logs", job_run_id, "--download-to", str(tmp_path / "dl"), check=True).stdout.split()
    assert [p.split("/")[-2] for p in listed] == ["node_0", "node_1"]
    # the attempt's one run keeps both nodes' output and each node's system metrics
    run = mlflow_client.get_run(attempt["mlflow_run_id"])
    assert run.info.status == "FINISHED" and run.data.tags["air.gpus"] == "4"  # over both nodes, as `air usage` counts
    folders = {f.path for f in mlflow_client.list_artifacts(run.info.run_id, "logs/attempt_0")}
    assert folders == {"logs/attempt_0/node_0", "logs/attempt_0/node_1"}
    assert {"system/node_0/cpu_utilization_percentage", "system/node_1/cpu_utilization_percentage"} <= set(
        run.data.metrics
    )
    assert nothing_left(job_run_id)


def test_cancel_stops_every_node(ray_cluster, air, tmp_path):
    # Given a long workload running on 2 nodes
    path = write_workload(
        tmp_path, command='echo "started $NODE_RANK"; sleep 600', compute={"num_accelerators": 0, "num_nodes": 2}
    )
    job_run_id = air.submit(path, "--ray-address", ray_cluster.address)
    air.wait(job_run_id, until=lambda job: "started" in air("logs", job_run_id, "--node", "1").stdout, timeout=180)

    # When it is canceled
    canceled = air.json("cancel", job_run_id)

    # Then it ends CANCELED, its run KILLED, and nothing of it runs on any node
    assert canceled[0]["status"] == "CANCELED"
    assert air.job(job_run_id)["attempts"][0]["status"] == "KILLED"
    assert nothing_left(job_run_id)


def test_a_node_that_fails_is_named_and_the_attempt_retried_on_new_nodes(ray_cluster, air, tmp_path, mlflow_client):
    # Given a workload whose node 1 fails on the first attempt only, with one retry allowed
    command = textwrap.dedent(
        """\
        echo "attempt $AIR_ATTEMPT node $NODE_RANK"
        if [ "$AIR_ATTEMPT" = 0 ] && [ "$NODE_RANK" = 1 ]; then exit 3; fi
        """
    )
    path = write_workload(tmp_path, command=command, max_retries=1, compute={"num_accelerators": 2, "num_nodes": 2})

    # When it runs
    job_run_id = air.submit(path, "--ray-address", ray_cluster.address)
    job = air.wait(job_run_id, timeout=180)

    # Then attempt 0 failed naming node 1 and its exit code, attempt 1 (placed again) succeeded
    assert job["status"] == "SUCCEEDED", (job["error"], job["attempts"])
    first, second = job["attempts"]
    assert first["status"] == "FAILED" and first["exit_code"] == 3
    assert first["error"].startswith("node 1 (") and "command exited with code 3" in first["error"]
    assert second["status"] == "FINISHED"
    assert "attempt 1 node 1" in air("logs", job_run_id, "--node", "1", "--retry", "1", check=True).stdout
    # each attempt is its own run
    assert mlflow_client.get_run(first["mlflow_run_id"]).info.status == "FAILED"
    assert nothing_left(job_run_id)


@pytest.mark.parametrize(
    "compute, expected",
    [
        ({"num_accelerators": 3}, "compute.num_accelerators: 3 GPU(s) is more than one node's 2 and not a multiple"),
        ({"num_accelerators": 6, "num_nodes": 3}, "3 node(s) with 1 CPU, 2 GPU each were asked for"),
    ],
)
def test_a_cluster_request_that_cannot_be_met_exits_2_creating_nothing(ray_cluster, air, tmp_path, compute, expected):
    # Given a workload whose GPUs cannot be spread over the cluster's nodes (2 GPUs each)
    path = write_workload(tmp_path, command="echo hi", compute=compute)

    # When it is submitted to the cluster, Then air exits 2 with the reason and creates nothing
    result = air("run", "-f", str(path), "--ray-address", ray_cluster.address)
    assert result.returncode == 2, result.stderr
    assert expected in result.stderr
    assert not (air.home / "jobs.db").exists()


def test_several_nodes_without_a_cluster_exit_2(air, tmp_path, monkeypatch):
    # Given no Ray address anywhere, When a 2-node workload is submitted, Then air says how to give one
    air.env.pop("AIR_RAY_ADDRESS", None)
    path = write_workload(tmp_path, command="echo hi", compute={"num_accelerators": 0, "num_nodes": 2})
    result = air("run", "-f", str(path))
    assert result.returncode == 2 and "needs a Ray cluster: pass --ray-address" in result.stderr
    # and a bad address is named
    bad = air("run", "-f", str(path), "--ray-address", "127.0.0.1:1")
    assert bad.returncode == 1 and "127.0.0.1:1" in bad.stderr
    assert not (air.home / "jobs.db").exists()


def gpus_seen():
    import os

    return os.environ.get("CUDA_VISIBLE_DEVICES")


def test_a_call_takes_its_turn_for_the_clusters_gpus_behind_a_workload_holding_them(ray_cluster, air, tmp_path):
    # Given a workload holding all 4 fake GPUs of the cluster (2 nodes x 2), admitted by AIR_HOME's GPU ledger
    path = write_workload(
        tmp_path, command='echo "started $NODE_RANK"; sleep 600', compute={"num_accelerators": 4, "num_nodes": 2}
    )
    job_run_id = air.submit(path, "--ray-address", ray_cluster.address)
    air.wait(job_run_id, until=lambda job: "started" in air("logs", job_run_id, "--node", "1").stdout, timeout=180)
    ledger = GpuLedger(JobStore(air.home))
    pool = f"Ray cluster {ray_cluster.address}"
    [held] = ledger.describe()["held"]
    assert (held["claim_id"], held["kind"], held["count"], held["pool"], held["gpus"]) == (
        job_run_id,
        "job",
        4,
        pool,
        [],
    )
    options = {"nodes": 2, "gpus": 1, "ray_address": ray_cluster.address, "log_system_metrics": False}
    call, impatient = distributed(**options)(gpus_seen), distributed(**options, wait=False)(gpus_seen)

    # When a notebook call on the same cluster asks not to wait, Then it is refused naming who holds the GPUs,
    # and leaves nothing queued
    with pytest.raises(GpusBusy, match=rf"1st in line for 2 GPUs; held by \S+'s job {job_run_id} since .*\(4 of "):
        impatient.distributed()
    assert ledger.describe()["queued"] == []

    # When it waits its turn instead, Then it is queued in the cluster's pool (never asking Ray for the nodes) ...
    results: list = []
    waiting = threading.Thread(target=lambda: results.append(call.distributed()), daemon=True)
    waiting.start()
    deadline = time.monotonic() + 60
    while not ledger.describe()["queued"] and time.monotonic() < deadline:
        time.sleep(0.2)
    [queued] = ledger.describe()["queued"]
    assert (queued["kind"], queued["count"], queued["pool"], queued["position"]) == ("call", 2, pool, 1)
    shown = air("queue", check=True).stdout  # by count: Ray names the GPUs when it places them
    assert f"4 of {pool}" in shown and f"2 of {pool}" in shown

    # ... and runs once the workload is canceled, its ranks on the GPUs Ray gave them
    air.json("cancel", job_run_id)
    waiting.join(timeout=180)
    assert not waiting.is_alive()
    assert [len(seen.split(",")) for seen in results[0]] == [1, 1]
    assert ledger.describe()["held"] == []  # the nodes kept for the next call hold no claim
    assert actor_processes("TrainingAgent")

    # When another workload takes the GPUs in the ledger (it waits in Ray for the kept nodes) and the next call of the
    # same shape, not waiting, is refused
    second = air.submit(path, "--ray-address", ray_cluster.address)
    air.wait(second, until=lambda job: "waiting for 2 node(s)" in (job["error"] or ""), timeout=120)
    with pytest.raises(GpusBusy, match=rf"held by \S+'s job {second}"):
        impatient.distributed()

    # Then the refused call freed the kept nodes, and the workload runs on them
    air.wait(second, until=lambda job: "started" in air("logs", second, "--node", "1").stdout, timeout=180)
    air.json("cancel", second)
    release_nodes()
    assert nothing_left(job_run_id) and nothing_left(second)
    Launcher.close()  # the decorator's warm-up started this process's fork server, as in a kernel
