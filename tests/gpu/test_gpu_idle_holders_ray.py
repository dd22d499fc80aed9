"""Idle GPU holders on a Ray cluster: a notebook's Ray actor sitting on another node's GPU memory, found by that
node's own sampler and named with the notebook whose kernel drives it."""

from __future__ import annotations

import asyncio
import json
import os
import pathlib
import time

import psutil
import pytest

pytestmark = [pytest.mark.ray, pytest.mark.usefixtures("ray_driver")]

GIB = 1 << 30
IDLE_SECONDS = 3.0
FAKE_PYNVML = pathlib.Path(__file__).parents[1] / "nvml_processes"


@pytest.fixture
def nvml_processes(tmp_path):
    """The file naming the fake GPU's compute processes on the node with an NVML GPU."""
    return tmp_path / "nvml-processes.json"


@pytest.fixture
def gpu_node(ray_cluster, nvml_processes):
    """A worker node whose actors see one idle NVML GPU (the tests' fake), removed at the end."""
    pythonpath = os.pathsep.join(filter(None, [str(FAKE_PYNVML), os.environ.get("PYTHONPATH")]))
    environment = {"PYTHONPATH": pythonpath, "AIR_TEST_NVML_PROCESSES": str(nvml_processes)}
    node = ray_cluster.add_node(gpus=1, cpus=1, environment=environment)
    ray_cluster.wait_for_nodes()
    yield node
    ray_cluster.remove_node(node)


@pytest.fixture
def air_config(ray_cluster):
    """Every node reads NVML (the fake one where there is one); idle after 3 s, checked every 0.5 s."""
    return {
        "sample_interval_seconds": 0.2,
        "idle_timeout_seconds": 60,
        "gpu_source": "nvml",
        "ray_address": ray_cluster.address,
        "mlflow_ui_autostart": False,
        "idle_holder_minutes": IDLE_SECONDS / 60,
        "idle_holder_check_seconds": 0.5,
    }


HOLD = """
import json, os, ray
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy
ray.init(address={address!r})

@ray.remote(num_cpus=0)
class Model:
    def pid(self):
        return os.getpid()

model = Model.options(scheduling_strategy=NodeAffinitySchedulingStrategy({node!r}, soft=False)).remote()
actor_pid = ray.get(model.pid.remote())
with open({file!r}, "w") as f:
    json.dump([[actor_pid, {held}]], f)
print(actor_pid)
"""


async def _holders(jp_fetch) -> list[dict]:
    return json.loads((await jp_fetch("jupyter-air", "gpu", "idle-holders")).body)["holders"]


async def test_an_actor_idle_on_another_nodes_gpu_is_listed_with_its_notebook_and_freed_by_shutting_the_kernel(
    jp_fetch, jp_serverapp, ray_cluster, gpu_node, nvml_processes, gpu
):
    # Given the GPU node's sampler running (an actor takes seconds to start: its GPU is watched from its first sample)
    deadline = time.monotonic() + 60
    while not (await gpu(node=gpu_node.node_id)).get("timestamps_ms") and time.monotonic() < deadline:
        await asyncio.sleep(0.2)
    # and a notebook's kernel that drives a Ray job whose actor holds 2 GiB on the GPU node's idle GPU
    body = json.dumps({"path": "work/serve.ipynb", "type": "notebook", "name": "s", "kernel": {"name": "python3"}})
    session = json.loads((await jp_fetch("api", "sessions", method="POST", body=body)).body)
    kernel_id = session["kernel"]["id"]
    client = jp_serverapp.kernel_manager.get_kernel(kernel_id).client()
    client.start_channels()
    try:
        await client.wait_for_ready(timeout=120)  # shell and IOPub connected: a reply sent before is lost
        code = HOLD.format(address=ray_cluster.address, node=gpu_node.node_id, file=str(nvml_processes), held=2 * GIB)
        sent_ms = time.time() * 1000
        reply = await client.execute_interactive(code, timeout=120)
        assert reply["content"]["status"] == "ok"
        actor_pid = json.loads(nvml_processes.read_text())[0][0]
        went_idle_ms = time.time() * 1000

        # When the kernel then does nothing, and the idle-holders route is read until the actor shows
        deadline = time.monotonic() + 90
        while not (rows := await _holders(jp_fetch)) and time.monotonic() < deadline:
            await asyncio.sleep(0.25)

        # Then its row names the kernel, the notebook, the node and GPU, the memory and the actor's pid
        (row,) = rows
        assert row["kernel_id"] == kernel_id and row["path"] == "work/serve.ipynb"
        assert row["node_id"] == gpu_node.node_id and row["gpu_index"] == 0 and row["node"]
        assert row["used_memory_bytes"] == 2 * GIB and row["pids"] == [actor_pid]
        # and it went idle at the kernel's last activity, not before the cell: at its end or later (output that
        # reaches the kernel after the cell, such as Ray's forwarded log lines, is activity too, and a loaded server
        # records it late), and it was listed 3 s after that, not sooner
        assert max(sent_ms, went_idle_ms - 5000) <= row["idle_since_ms"]
        assert time.time() * 1000 >= row["idle_since_ms"] + IDLE_SECONDS * 1000

        # And the GPU panel's detail of that node marks the actor's process with the notebook it works for
        detail = await gpu(node=gpu_node.node_id)
        (process,) = [p for p in detail["processes"] if p["pid"] == actor_pid]
        assert process["kernel_id"] == kernel_id and process["path"] == "work/serve.ipynb"
        assert process["idle_since_ms"] == row["idle_since_ms"]
    finally:
        client.stop_channels()

    # When the kernel is shut down (the notification's Shut down)
    await jp_fetch("api", "sessions", session["id"], method="DELETE")

    # Then Ray ends its actor, freeing the GPU, and the holder is no longer listed
    deadline = time.monotonic() + 60
    while psutil.pid_exists(actor_pid) and time.monotonic() < deadline:
        await asyncio.sleep(0.25)
    assert not psutil.pid_exists(actor_pid)
    while await _holders(jp_fetch) and time.monotonic() < deadline:
        await asyncio.sleep(0.25)
    assert await _holders(jp_fetch) == []
