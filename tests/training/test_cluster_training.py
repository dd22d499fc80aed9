"""Notebook calls spread over two nodes of a real Ray cluster on loopback (fake GPUs, gloo on CPU ranks)."""

from __future__ import annotations

import io
import os
import signal
import threading
import time
from contextlib import redirect_stdout

import pytest
from IPython.core.interactiveshell import InteractiveShell
from ray_cluster import actor_processes, agent_processes

from jupyter_air import DistributedError, distributed
from jupyter_air.training.errors import DistributedTimeout

pytestmark = [pytest.mark.ray, pytest.mark.usefixtures("ray_driver")]


def all_reduce_with_node_facts():
    import os

    import psutil
    import torch
    import torch.distributed as dist

    dist.init_process_group("gloo")
    rank = dist.get_rank()
    value = torch.tensor([float(rank + 1)])
    dist.all_reduce(value)
    # Where node 0's rendezvous store listens (its call process and the ranks it forked share the socket).
    port = int(os.environ["MASTER_PORT"])
    listening = [c for c in psutil.net_connections("inet") if c.status == psutil.CONN_LISTEN]
    store = sorted({c.laddr.ip for c in listening if c.laddr.port == port})
    print(f"rank {rank} of {dist.get_world_size()} sees {value.item()}", flush=True)
    dist.destroy_process_group()
    return {
        "rank": rank,
        "sum": value.item(),
        "group_rank": os.environ["GROUP_RANK"],
        "gpus": os.environ.get("CUDA_VISIBLE_DEVICES"),
        "store_listens_on": store,
    }


def no_leftovers(timeout: float = 20.0) -> list:
    """Processes a node actor started, its guard, or a training actor, still alive after a bounded wait (Ray kills
    an actor asynchronously: its process may outlive the call's end by a moment)."""
    deadline = time.monotonic() + timeout
    while (left := agent_processes() + actor_processes("TrainingAgent")) and time.monotonic() < deadline:
        time.sleep(0.2)
    return left


@pytest.fixture
def cluster_env(ray_cluster, store, monkeypatch):
    """The cluster's address as the Jupyter server would export it, and the session's MLflow store."""
    monkeypatch.setenv("AIR_RAY_ADDRESS", ray_cluster.address)
    return ray_cluster


def test_ddp_all_reduce_across_two_nodes_keeps_every_ranks_log(cluster_env, runs_of, artifact_text):
    # Given a DDP all-reduce on 2 nodes x 2 ranks of the cluster
    train = distributed(all_reduce_with_node_facts, gpus=2, nodes=2, experiment="cluster-ddp")
    out = io.StringIO()

    # When it runs
    with redirect_stdout(out):
        results = train.distributed()

    # Then every rank saw the sum over all 4 ranks, results come back by global rank, node n holds ranks 2n, 2n+1
    assert [r["rank"] for r in results] == [0, 1, 2, 3]
    assert {r["sum"] for r in results} == {10.0}
    assert [r["group_rank"] for r in results] == ["0", "0", "1", "1"]
    # each node's actor got its bundle's 2 GPUs from Ray, and node 0's store listens on node 0's address only
    assert {r["gpus"] for r in results} == {"0,1"}
    assert results[0]["store_listens_on"] == ["127.0.0.1"]
    # the cell showed each rank's lines live, prefixed by node and rank
    shown = out.getvalue()
    for rank in range(4):
        assert f"[node {rank // 2} rank {rank}] rank {rank} of 4 sees 10.0" in shown
    # and one run holds the call: its shape, each rank's log by node, each node's system metrics
    (run,) = runs_of("cluster-ddp")
    assert run.info.status == "FINISHED"
    tags = run.data.tags
    assert (tags["air.nodes"], tags["air.world_size"], tags["air.gpus"]) == ("2", "4", "4")
    for rank in range(4):
        log = artifact_text(run.info.run_id, f"logs/node_{rank // 2}/rank_{rank}.log")
        assert f"rank {rank} of 4 sees 10.0" in log
    for node in (0, 1):
        assert f"system/node_{node}/cpu_utilization_percentage" in run.data.metrics
        assert f"system/node_{node}/gpu_0_temperature_celsius" in run.data.metrics


def wait_then_fail_on_rank_2():
    import os
    import time

    import torch
    import torch.distributed as dist

    dist.init_process_group("gloo")
    if os.environ["RANK"] == "2":
        time.sleep(1)
        raise ValueError("rank 2 cannot go on")
    dist.all_reduce(torch.ones(1))  # the other ranks wait here for rank 2, which is gone
    return "unreachable"


def test_a_rank_failing_on_node_1_is_named_as_the_root_cause(cluster_env, runs_of):
    # Given a call where rank 2 (node 1) raises while the others wait for it in an all-reduce
    train = distributed(wait_then_fail_on_rank_2, gpus=2, nodes=2, experiment="cluster-root-cause")

    # When it runs, Then the error names node 1, rank 2 and its exception, with the failing source line,
    # even though node 0's ranks failed too (a closed connection to their peer)
    with pytest.raises(DistributedError) as caught, redirect_stdout(io.StringIO()):
        train.distributed()
    error = caught.value
    assert (error.node, error.rank, error.exception_type) == (1, 2, "ValueError")
    assert str(error).startswith("node 1 (")
    assert 'raise ValueError("rank 2 cannot go on")' in error.worker_traceback
    assert {0, 1, 2, 3} >= set(error.failures) >= {2}
    (run,) = runs_of("cluster-root-cause")
    assert run.info.status == "FAILED"
    assert "node 1" in run.data.tags["air.error"] and "rank 2 cannot go on" in run.data.tags["air.error"]


def hang():
    import time

    print("started", flush=True)
    time.sleep(600)


def test_the_magic_spreads_a_cell_over_nodes(cluster_env, store, runs_of):
    # Given the magics in a shell and a notebook name the cell reads
    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "jupyter_air")
    shell.user_ns["base"] = 100
    try:
        # When a cell runs with --nodes 2
        with redirect_stdout(io.StringIO()):
            shell.run_cell_magic(
                "air_distributed",
                "--nodes 2 --gpus 2 --experiment cluster-magic --no-system-metrics",
                'import os\nwhere = base + int(os.environ["RANK"]) * 10 + int(os.environ["WORLD_SIZE"])',
            )
    finally:
        shell.run_line_magic("unload_ext", "jupyter_air")
    # Then rank 0's names came back (world size 4: two ranks on each node) and the run records 2 nodes
    assert shell.user_ns["where"] == 104
    (run,) = runs_of("cluster-magic")
    assert run.data.tags["air.nodes"] == "2"


def test_a_timeout_stops_every_node(cluster_env, runs_of):
    # Given a hung call on 2 nodes with a timeout (actors kept from an earlier call of this shape are reused)
    train = distributed(hang, gpus=2, nodes=2, experiment="cluster-timeout", timeout=4)

    # When it runs past the timeout, Then it is stopped and the run FAILED
    with pytest.raises(DistributedTimeout), redirect_stdout(io.StringIO()):
        train.distributed()
    (run,) = runs_of("cluster-timeout")
    assert run.info.status == "FAILED"
    # and nothing it started runs on any node (kept actors are killed too): no rank, fork server, guard, actor
    assert no_leftovers() == []
    assert actor_processes("TrainingAgent") == []


def test_an_interrupt_stops_every_node_and_marks_the_run_killed(cluster_env, runs_of):
    # Given a hung call on 2 nodes, and a kernel interrupt arriving once it runs
    train = distributed(hang, gpus=2, nodes=2, experiment="cluster-interrupt")
    out = io.StringIO()

    def interrupt_once_started():
        deadline = time.monotonic() + 120
        while out.getvalue().count("started") < 4 and time.monotonic() < deadline:
            time.sleep(0.1)
        os.kill(os.getpid(), signal.SIGINT)

    threading.Thread(target=interrupt_once_started, daemon=True).start()

    # When the interrupt arrives, Then KeyboardInterrupt reaches the caller and the run is KILLED
    with pytest.raises(KeyboardInterrupt), redirect_stdout(out):
        train.distributed()
    (run,) = runs_of("cluster-interrupt")
    assert run.info.status == "KILLED"
    assert no_leftovers() == []
    assert actor_processes("TrainingAgent") == []


def test_a_bad_address_fails_in_seconds_naming_it_before_any_run(store, runs_of):
    # Given an address where nothing listens
    train = distributed(hang, nodes=2, ray_address="127.0.0.1:1", experiment="cluster-bad-address")
    started = time.monotonic()

    # When the call is made, Then it fails within seconds with an error that names the address
    with pytest.raises(ConnectionError, match=r"127\.0\.0\.1:1"):
        train.distributed()
    assert time.monotonic() - started < 30
    # and no run was created
    assert store.get_experiment_by_name("cluster-bad-address") is None


def test_an_address_that_is_not_ray_fails_in_seconds_naming_it(store):
    # Given a TCP server that accepts connections and says nothing (not a Ray head)
    import socket

    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(8)
    address = f"127.0.0.1:{silent.getsockname()[1]}"
    try:
        # When a call is made there, Then it fails within seconds saying the address is no Ray head
        started = time.monotonic()
        with pytest.raises(ConnectionError, match="answers TCP but not as a Ray head"):
            distributed(hang, nodes=2, ray_address=address).distributed()
        assert time.monotonic() - started < 30
    finally:
        silent.close()


def test_several_nodes_without_a_cluster_say_what_to_set(store, monkeypatch):
    # Given no Ray address anywhere, When a 2-node call is made, Then the error says how to give one
    monkeypatch.delenv("AIR_RAY_ADDRESS", raising=False)
    with pytest.raises(DistributedError, match="AIR_RAY_ADDRESS"):
        distributed(hang, nodes=2).distributed()
    with pytest.raises(ValueError, match="not an address"):
        distributed(hang, nodes=2, ray_address="no port here")
