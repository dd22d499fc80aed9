"""Node actors parked between remote calls, without a cluster: an actor's claim, its own expiry and its end with the
driver that claimed it (the removal of its placement group recorded), and the keeper process that lists parked nodes
as held (in the GPU panel's answer of a real Jupyter server too) and ends when a call takes them."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
import threading
import time

import pytest

from jupyter_air.cluster import agent, keeper
from jupyter_air.cluster.held import holders, waiting_hint

NODES = [{"node": 0, "hostname": "gpu-1", "ip": "10.0.0.1", "ray_node_id": "a" * 56}]
NAMES = ["air-parked-alice-0123456789ab-0"]


@pytest.fixture
def parked_agent(monkeypatch):
    """A node agent's parking state (no actor, no guard) whose placement group removals are recorded."""
    removed = []
    placement_groups = importlib.import_module("ray.util.placement_group")  # the module, not its function
    monkeypatch.setattr(placement_groups, "remove_placement_group", removed.append)
    monkeypatch.setattr(agent, "_PARKED_STEP_SECONDS", 0.01)
    drivers = {"driver-1", "driver-2"}  # Ray's job table: the drivers connected now
    monkeypatch.setattr(agent, "driver_alive", drivers.__contains__)
    node = agent.NodeAgent.__new__(agent.NodeAgent)
    node._parking, node._parked, node._claim = threading.Lock(), None, None
    yield node, removed, drivers
    with node._parking:  # no thread outlives the test: it would free the group with Ray's real function
        node._parked = node._claim = None
    for thread in threading.enumerate():
        if thread.name in ("air-parked", "air-claimed"):
            thread.join(5)


def _until(predicate, timeout: float = 30.0):
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "not in time"
        time.sleep(0.05)


def test_a_parked_actor_is_claimed_once_and_a_claimed_one_never_expires(parked_agent):
    node, removed, drivers = parked_agent
    # Given an actor parked for a minute with its group
    node.park(60.0, "group-1")
    # When two drivers claim it, then its keeper asks it to free its nodes
    first, second = node.claim("driver-1"), node.claim("driver-2")
    freed = node.expire()
    # Then the first got the group, the second nothing, and the claimed actor kept its nodes
    assert (first, second, freed) == ("group-1", None, False)
    time.sleep(0.1)
    assert removed == []


def test_an_unclaimed_actor_frees_its_nodes_when_its_time_is_over(parked_agent):
    node, removed, drivers = parked_agent
    # Given an actor parked for 0.1 s
    node.park(0.1, "group-1")
    # When nobody claims it
    _until(lambda: removed)
    # Then it removed its placement group once (ending its group's actors), and cannot be claimed any more
    time.sleep(0.1)
    assert removed == ["group-1"]
    assert node.claim("driver-1") is None


def test_an_actor_parked_again_keeps_to_its_new_time(parked_agent):
    node, removed, drivers = parked_agent
    # Given an actor parked for 0.1 s, claimed, then parked again for a minute
    node.park(0.1, "group-1")
    assert node.claim("driver-1") == "group-1"
    node.park(60.0, "group-1")
    # When the first parking's time is over
    time.sleep(0.3)
    # Then its nodes are still held
    assert removed == []


def test_a_claimed_actor_frees_its_nodes_once_its_driver_is_gone(parked_agent):
    node, removed, drivers = parked_agent
    # Given an actor parked for a minute, claimed by a driver that runs
    node.park(60.0, "group-1")
    assert node.claim("driver-1") == "group-1"
    time.sleep(0.1)
    assert removed == []
    # When the driver is gone (killed: it never parked the actor again)
    drivers.discard("driver-1")
    # Then the actor removes its placement group once, as the driver's own actors would have ended with it
    _until(lambda: removed)
    time.sleep(0.1)
    assert removed == ["group-1"]


def test_an_actor_its_driver_parked_again_outlives_that_driver(parked_agent):
    node, removed, drivers = parked_agent
    # Given an actor claimed by a driver that parks it again for the next one before it ends
    node.park(60.0, "group-1")
    node.claim("driver-1")
    node.park(60.0, "group-1")
    # When that driver is gone
    drivers.discard("driver-1")
    time.sleep(0.3)
    # Then the actor still holds its nodes, for the next driver to claim
    assert removed == []
    assert node.claim("driver-2") == "group-1"


async def test_the_keeper_lists_parked_nodes_and_ends_without_freeing_them_once_a_call_takes_them(
    jp_fetch, jp_root_dir, tmp_path, monkeypatch
):
    monkeypatch.setenv("AIR_HOME", str(tmp_path / "air"))
    monkeypatch.setenv("JPY_SESSION_NAME", str(jp_root_dir / "work" / "train.ipynb"))  # the submitting kernel's
    # Given the keeper a remote call's supervisor starts for its parked actors
    spec = {"address": "127.0.0.1:1", "names": NAMES, "nodes": NODES, "share": "1 CPU, 2 GPU", "seconds": 60}
    process = subprocess.Popen([sys.executable, "-m", "jupyter_air.cluster.keeper", json.dumps(spec)])
    try:
        _until(holders)
        (record,) = holders()
        # Then it is listed as holding the nodes, and a job waiting for nodes says how to free them
        assert (record["pid"], record["names"], record["nodes"]) == (process.pid, NAMES, NODES)
        hint = waiting_hint()
        assert f"remote calls' keeper (process {process.pid}) keeps 1 node(s) (gpu-1)" in hint
        assert f"`kill {process.pid}`" in hint
        # and the GPU panel lists it as parked by remote calls, under the notebook's path in the server
        listed = json.loads((await jp_fetch("jupyter-air", "gpu", "idle-holders")).body)["node_holders"]
        assert [(row["pid"], row["parked"], row["nodes"]) for row in listed] == [(process.pid, True, NODES)]
        assert listed[0]["path"] == "work/train.ipynb"
        # When the next remote call takes the actors
        keeper.dismiss(NAMES)
        # Then the keeper ends at once and its listing goes, without asking the cluster anything (its address
        # answers nothing: freeing would fail)
        assert process.wait(10) == 0
        assert holders() == []
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
