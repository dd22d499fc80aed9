"""The GPU REST API of a server configured with a Ray cluster: every node samples itself, the server fans in."""

from __future__ import annotations

import asyncio
import json
import time

import pytest
from tornado.httpclient import HTTPClientError

pytestmark = [pytest.mark.ray, pytest.mark.usefixtures("ray_driver")]


@pytest.fixture
def extra_node(ray_cluster):
    """A third worker node (no GPU resource; its simulated source still reports 2 GPUs), removed by the test."""
    node = ray_cluster.add_node(gpus=0, cpus=1)
    ray_cluster.wait_for_nodes()
    yield node
    if node in ray_cluster.cluster.worker_nodes:
        ray_cluster.remove_node(node)


@pytest.fixture
def air_config(ray_cluster):
    """Every node samples simulated GPUs every 0.2 s; the server fans in from the session's cluster."""
    return {
        "sample_interval_seconds": 0.2,
        "idle_timeout_seconds": 60,
        "gpu_source": "simulated",
        "ray_address": ray_cluster.address,
    }


def by_id(payload: dict) -> dict[str, dict]:
    return {node["id"]: node for node in payload["nodes"]}


async def when_live(gpu, **query) -> dict:
    """Poll until every node's sampler has answered once (an actor takes seconds to start); then one more answer,
    whose detail was chosen with every node live (an answer picks its detail node before it asks the nodes)."""
    payload = await gpu(**query)
    deadline = time.monotonic() + 60
    while any(n["state"] == "starting" for n in payload["nodes"]) and time.monotonic() < deadline:
        await asyncio.sleep(0.2)
        payload = await gpu(**query)
    return await gpu(**query)


async def test_every_node_is_listed_and_one_removed_shows_unreachable_not_zero(gpu, jp_fetch, ray_cluster, extra_node):
    # Given a server watching a cluster of 4 nodes (the head and 3 workers), each sampling 2 simulated GPUs
    # When the panel polls (nodes whose sampler is still starting say so, without values)
    first = await gpu()
    assert {n["state"] for n in first["nodes"]} <= {"starting", "live"}
    assert all(n["gpus"] == [] for n in first["nodes"] if n["state"] == "starting")
    first = await when_live(gpu)

    # Then every node is listed, live, with its GPUs' newest values, and the detail is the server's own node
    nodes = by_id(first)
    assert len(nodes) == 4
    assert {n["state"] for n in nodes.values()} == {"live"}
    assert {n["gpu_count"] for n in nodes.values()} == {2}
    for node in nodes.values():
        assert node["source"] == "simulated" and node["last_seen_ms"] > 0
        assert all(g["utilization_percent"] is not None and g["memory_total_bytes"] for g in node["gpus"])
    assert first["cluster"] == {"address": ray_cluster.address, "error": None}
    assert nodes[first["node_id"]]["is_server_node"] is True
    assert first["available"] is True and len(first["devices"]) == 2 and first["timestamps_ms"]

    # and one node's detail is today's payload for that node, history included
    removed = extra_node.node_id
    detail = await gpu(node=removed)
    assert detail["node_id"] == removed and detail["node_state"] == "live"
    assert len(detail["devices"]) == 2 and len(detail["gpus"]["utilization_percent"][0]) >= 1
    # and a refresh of that node samples it now
    refreshed = await gpu(node=removed, refresh=True)
    assert refreshed["timestamps_ms"][-1] > detail["timestamps_ms"][-1]

    # When that node is removed from the cluster
    ray_cluster.remove_node(extra_node)

    # Then it soon shows as unreachable, with when it was last seen and no values (never zero), the others live
    deadline = time.monotonic() + 30
    while (seen := by_id(await gpu()))[removed]["state"] != "unreachable" and time.monotonic() < deadline:
        await asyncio.sleep(0.2)
    gone = seen[removed]
    assert gone["state"] == "unreachable" and gone["gpus"] == [] and gone["last_seen_ms"] > 0
    assert {n["state"] for node_id, n in seen.items() if node_id != removed} == {"live"}
    # and its detail says so instead of showing numbers
    absent = await gpu(node=removed)
    assert absent["node_state"] == "unreachable" and absent["available"] is False
    assert "unreachable" in absent["reason"] and absent["devices"] == [] and absent["timestamps_ms"] == []


async def test_an_unknown_node_is_a_404_naming_the_list(gpu, jp_fetch):
    # Given a cluster server, When the panel asks for a node the cluster does not have
    with pytest.raises(HTTPClientError) as caught:
        await jp_fetch("jupyter-air", "gpu", params={"node": "0123abcd"})

    # Then the answer is 404 with what to do
    assert caught.value.code == 404
    message = json.loads(caught.value.response.body)["message"]
    assert "No node '0123abcd' in the Ray cluster" in message and "nodes" in message
