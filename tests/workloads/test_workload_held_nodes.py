"""A 2-node job waiting for the nodes a notebook keeps: `air get`, `air list` name the notebook and how to free them,
and the GPU panel's Release frees them (a real Ray cluster on loopback, 2 nodes of 2 fake GPUs)."""

from __future__ import annotations

import os

import pytest
from workload_helpers import write_workload

from jupyter_air import distributed
from jupyter_air.cluster.held import holders, request_release
from jupyter_air.training import release_nodes

pytestmark = [pytest.mark.ray, pytest.mark.usefixtures("ray_driver")]


def hostname():
    import socket

    return socket.gethostname()


@pytest.fixture
def fork_server():
    """This process's fork server (a notebook's, here), started before the test's AIR_HOME is set: it lives as long
    as the process and is none of the job's processes."""
    from jupyter_air.training.forkserver_client import Launcher

    Launcher.get()


def test_a_waiting_job_names_the_notebook_keeping_its_nodes_and_runs_once_they_are_released(
    ray_cluster, fork_server, air, tmp_path, monkeypatch
):
    # Given a notebook whose 2-node call ended: its actors keep both GPU nodes (2 GPUs each) for its next call
    monkeypatch.setenv("AIR_RAY_ADDRESS", ray_cluster.address)
    monkeypatch.setenv("JPY_SESSION_NAME", "work/train.ipynb")
    try:
        distributed(hostname, gpus=2, nodes=2, experiment="held-nodes").distributed()
        (held,) = holders()
        assert held["pid"] == os.getpid() and held["notebook"] == "work/train.ipynb" and len(held["nodes"]) == 2

        # When a job asks for the same 2 nodes with 2 GPUs each
        path = write_workload(tmp_path, command="echo ran", compute={"num_accelerators": 4, "num_nodes": 2})
        job_run_id = air.submit(path, "--ray-address", ray_cluster.address)
        job = air.wait(job_run_id, until=lambda j: "held:" in (j["error"] or ""), timeout=120)

        # Then it waits, PENDING, saying which notebook keeps which nodes and how to free them: in `air get`...
        assert job["status"] == "PENDING"
        waiting = job["error"]
        assert f"notebook work/train.ipynb (process {os.getpid()}) keeps 2 node(s)" in waiting
        assert "`release_nodes()` in that notebook" in waiting and "shutting down its kernel" in waiting
        shown = air("get", job_run_id, check=True).stdout
        assert "Waiting" in shown and "work/train.ipynb" in shown
        # ... and in `air list`
        listed = air("list", check=True)
        assert f"{job_run_id}: waiting for 2 node(s)" in listed.stderr and "work/train.ipynb" in listed.stderr

        # When Release is asked for (what the GPU panel's button does)
        assert request_release(os.getpid())

        # Then the notebook frees its nodes and the job runs on them
        job = air.wait(job_run_id, timeout=180)
        assert job["status"] == "SUCCEEDED", (job["error"], job["attempts"])
        assert holders() == []
    finally:
        release_nodes()
