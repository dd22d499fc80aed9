"""Calls on nodes that stand for two machines (``air.io/host`` labels): where runs can be tracked, a lost node."""

from __future__ import annotations

import contextlib
import io
import os
import re
import signal
import subprocess
import sys
import threading
import time
from contextlib import redirect_stdout

import pytest
from ray_cluster import actor_processes, agent_processes

from jupyter_air import distributed
from jupyter_air.cluster.errors import TrackingUnreachable
from jupyter_air.training.errors import NodeLost

pytestmark = [pytest.mark.ray, pytest.mark.usefixtures("ray_driver")]


#: GPUs of each labelled node: more than the session cluster's own nodes have, so 3-GPU calls land only here.
HOST_GPUS = 3


@pytest.fixture(scope="module")
def two_hosts(ray_cluster, mlflow_server):
    """Two nodes added to the session's cluster, labelled as two machines (host-a, host-b), with 3 fake GPUs
    each; and the session's MLflow server, ready. The nodes are removed after the module (one is lost by then)."""
    nodes = [ray_cluster.add_node(gpus=HOST_GPUS, cpus=HOST_GPUS, host=host) for host in ("host-a", "host-b")]
    ray_cluster.wait_for_nodes()
    mlflow_server.ready()
    yield ray_cluster, nodes
    for node in nodes:
        with contextlib.suppress(Exception):  # the lost node's raylet is already gone
            ray_cluster.remove_node(node)


@pytest.fixture
def on_two_hosts(two_hosts, monkeypatch):
    monkeypatch.setenv("AIR_RAY_ADDRESS", two_hosts[0].address)
    for name in ("MLFLOW_RUN_ID", "MLFLOW_EXPERIMENT_NAME", "MLFLOW_EXPERIMENT_ID", "JPY_SESSION_NAME"):
        monkeypatch.delenv(name, raising=False)
    return two_hosts


CLIENT_CALL = """
import os, sys
from jupyter_air import distributed
from jupyter_air.training import release_nodes

def rank():
    return os.environ["RANK"]

if __name__ == "__main__":
    call = distributed(rank, nodes=2, gpus=3, ray_address=sys.argv[1], experiment="hosts-client")
    print("RESULTS", call.distributed(), call.distributed())
    release_nodes()  # else the kept actors live on for Ray Client's reconnect grace period
"""


def test_ray_client_mode_runs_calls_from_a_machine_outside_the_cluster(two_hosts, store, mlflow_server, tmp_path):
    from mlflow.tracking import MlflowClient

    # Given a kernel that reaches the cluster only through Ray Client (ray://), tracking to the shared server
    uri = mlflow_server.uri
    client_port = two_hosts[0].client_port
    script = tmp_path / "client_call.py"
    script.write_text(CLIENT_CALL)
    env = {**os.environ, "MLFLOW_TRACKING_URI": uri}

    # When it makes two calls on 2 nodes
    result = subprocess.run(
        [sys.executable, str(script), f"ray://127.0.0.1:{client_port}"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )

    # Then both run, results by rank, each its own run in the server
    logs = sorted(two_hosts[0].temp_dir.rglob("ray_client_server*.*"))  # the proxy's and each client server's
    server_logs = "".join(f"\n--- {p.name}\n{p.read_text(errors='replace')[-1500:]}" for p in logs)
    assert result.returncode == 0, result.stderr[-3000:] + server_logs
    ranks = [str(rank) for rank in range(2 * HOST_GPUS)]
    assert f"RESULTS {ranks} {ranks}" in result.stdout
    client = MlflowClient(uri)
    runs = client.search_runs([client.get_experiment_by_name("hosts-client").experiment_id])
    assert [r.info.status for r in runs] == ["FINISHED", "FINISHED"]


def log_from_rank_0():
    import os

    import mlflow

    if os.environ["RANK"] == "0":
        with mlflow.start_run(run_id=os.environ["MLFLOW_RUN_ID"]):
            mlflow.log_metric("loss", 0.25)
    print("logged", flush=True)
    return os.environ["RANK"]


def test_a_local_tracking_store_is_refused_across_hosts(on_two_hosts, store, monkeypatch):
    # Given the embedded SQLite store (a file on this machine) and nodes on two hosts
    train = distributed(log_from_rank_0, gpus=HOST_GPUS, nodes=2, experiment="hosts-sqlite")

    # When the call is made, Then it is refused before anything runs, saying what to set
    with pytest.raises(TrackingUnreachable) as caught:
        train.distributed()
    message = str(caught.value)
    assert "host-a" in message and "host-b" in message and "MLFLOW_TRACKING_URI=http://" in message
    assert "mlflow server" in message
    # and no run was written anywhere
    assert store.get_experiment_by_name("hosts-sqlite") is None


def test_a_shared_mlflow_server_tracks_a_call_across_hosts(on_two_hosts, store, mlflow_server, monkeypatch):
    from mlflow.tracking import MlflowClient

    # Given a shared MLflow tracking server over HTTP
    uri = mlflow_server.uri
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    train = distributed(log_from_rank_0, gpus=HOST_GPUS, nodes=2, experiment="hosts-http", log_system_metrics=False)

    # When the call runs on both hosts
    with redirect_stdout(io.StringIO()):
        assert train.distributed() == [str(rank) for rank in range(2 * HOST_GPUS)]

    # Then its one run is in the server: FINISHED, the metric rank 0 logged, both nodes' logs as artifacts
    client = MlflowClient(uri)
    experiment = client.get_experiment_by_name("hosts-http")
    (run,) = client.search_runs([experiment.experiment_id])
    assert run.info.status == "FINISHED"
    assert run.data.metrics["loss"] == 0.25
    folders = {item.path for item in client.list_artifacts(run.info.run_id, "logs")}
    assert folders == {"logs/node_0", "logs/node_1"}


def all_reduce_forever():
    import os
    import time

    import torch
    import torch.distributed as dist

    dist.init_process_group("gloo")
    print(f"raylet {os.environ['RAY_RAYLET_PID']}", flush=True)
    while True:
        dist.all_reduce(torch.ones(1))
        time.sleep(0.1)


def test_a_node_lost_mid_call_fails_naming_it_and_leaves_nothing(on_two_hosts, store, mlflow_server, monkeypatch):
    from mlflow.tracking import MlflowClient

    # Given a call looping in all-reduce on both nodes (tracked by the shared server)
    uri = mlflow_server.uri
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    train = distributed(
        all_reduce_forever, gpus=HOST_GPUS, nodes=2, experiment="hosts-node-lost", log_system_metrics=False
    )
    out = io.StringIO()
    killed = {}

    def kill_node_1_raylet():
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            found = re.search(r"\[node 1 rank \d+\] raylet (\d+)", out.getvalue())
            if found:
                time.sleep(1)  # a few all-reduce rounds
                killed["at"] = time.monotonic()
                os.kill(int(found.group(1)), signal.SIGKILL)
                return
            time.sleep(0.1)

    threading.Thread(target=kill_node_1_raylet, daemon=True).start()

    # When node 1's raylet is killed mid-call
    with pytest.raises(NodeLost) as caught, redirect_stdout(out):
        train.distributed()

    # Then the call fails within 30 s, naming node 1
    assert time.monotonic() - killed["at"] < 30
    assert caught.value.node == 1
    assert str(caught.value).startswith("node 1 (")
    # and its run is FAILED with that cause
    client = MlflowClient(uri)
    (run,) = client.search_runs([client.get_experiment_by_name("hosts-node-lost").experiment_id])
    assert run.info.status == "FAILED"
    assert "NodeLost: node 1" in run.data.tags["air.error"]
    # and nothing it started runs anywhere: no rank, fork server or guard on either node, no actor (a bound on the
    # clean-up, not a speed: the dead node's guard and Ray's kill of the other's actor, on a machine under load)
    deadline = time.monotonic() + 60
    while (agent_processes() or actor_processes("TrainingAgent")) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert agent_processes() == []
    assert actor_processes("TrainingAgent") == []
