"""Which notebook holds my GPU: GPU processes attributed to kernels of this server."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import threading

import pytest

from jupyter_air.gpu.attribution import attribute, kernel_of
from jupyter_air.gpu.types import GpuProcess


async def test_kernel_process_is_attributed_to_its_notebook(jp_fetch, jp_serverapp, gpu, fake_nvml):
    # Given a real kernel started for a notebook through the server
    response = await jp_fetch(
        "api",
        "sessions",
        method="POST",
        body=json.dumps(
            {
                "path": "experiments/train.ipynb",
                "type": "notebook",
                "name": "train.ipynb",
                "kernel": {"name": "python3"},
            }
        ),
    )
    session = json.loads(response.body)
    kernel_id = session["kernel"]["id"]
    kernel_pid = jp_serverapp.kernel_manager.get_kernel(kernel_id).provisioner.pid
    try:
        # And NVML reports that kernel and an unrelated process on GPU 1
        fake_nvml.gpus[1].processes = [(kernel_pid, 3 << 30), (os.getpid(), 1 << 20)]
        # When the panel refreshes
        payload = await gpu(refresh=True)
        # Then the kernel's row names the kernel and the notebook path; the other row names none
        rows = {row["pid"]: row for row in payload["processes"]}
        assert rows[kernel_pid] == {
            "gpu_index": 1,
            "pid": kernel_pid,
            "name": rows[kernel_pid]["name"],
            "used_memory_bytes": 3 << 30,
            "kernel_id": kernel_id,
            "path": "experiments/train.ipynb",
            "idle_since_ms": None,  # not an idle holder: it has not been idle 30 minutes
        }
        assert rows[kernel_pid]["name"]
        assert rows[os.getpid()]["kernel_id"] is None and rows[os.getpid()]["path"] is None
    finally:
        await jp_fetch("api", "sessions", session["id"], method="DELETE")


def test_child_of_a_kernel_is_attributed_to_that_kernel():
    # Given a real child process of this process, standing in for a kernel's training worker
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        # When its pid is looked up against a kernel whose pid is this process
        kernels = {os.getpid(): "kernel-1"}
        # Then the parent chain leads to the kernel
        assert kernel_of(child.pid, kernels) == "kernel-1"
        rows = attribute([GpuProcess(0, child.pid, "python", 5)], kernels, {"kernel-1": "a.ipynb"})
        assert rows[0]["kernel_id"] == "kernel-1" and rows[0]["path"] == "a.ipynb"
        # And an unknown or vanished pid belongs to no kernel
        assert kernel_of(child.pid, {1_000_000_000: "other"}) is None
    finally:
        child.kill()
        child.wait()
    assert kernel_of(child.pid, {os.getpid(): "kernel-1"}) is None


#: A server that samples once an hour: every request below reads the same sample.
HOURLY = {
    "sample_interval_seconds": 3600,
    "idle_timeout_seconds": 7200,
    "gpu_source": "nvml",
    "mlflow_ui_autostart": False,
}


@pytest.mark.parametrize("air_config", [HOURLY])
async def test_processes_are_named_once_per_sample_off_the_event_loop(
    jp_fetch, jp_serverapp, gpu, fake_nvml, monkeypatch
):
    from jupyter_air.gpu import service

    # Given a real kernel whose pid NVML reports on GPU 0, and a server sampling once an hour
    response = await jp_fetch(
        "api", "sessions", method="POST", body=json.dumps({"path": "a.ipynb", "type": "notebook", "kernel": {}})
    )
    session = json.loads(response.body)
    kernel_id = session["kernel"]["id"]
    fake_nvml.gpus[0].processes = [(jp_serverapp.kernel_manager.get_kernel(kernel_id).provisioner.pid, 1 << 30)]
    named_on = []

    def spy(processes, kernel_pids, kernel_paths):
        named_on.append(threading.current_thread() is threading.main_thread())
        return attribute(processes, kernel_pids, kernel_paths)

    monkeypatch.setattr(service, "attribute", spy)
    try:
        # When the panel takes a sample, then polls 3 times in a row and 3 times at once
        answers = [await gpu(refresh=True)]
        answers += [await gpu() for _ in range(3)]
        answers += await asyncio.gather(*(gpu() for _ in range(3)))
        # Then every answer names the kernel and its notebook, looked up once, off the event loop's thread
        assert {(r["kernel_id"], r["path"]) for a in answers for r in a["processes"]} == {(kernel_id, "a.ipynb")}
        assert named_on == [False]
        # When a new sample is taken, Then they are looked up again for it
        await gpu(refresh=True)
        assert named_on == [False, False]
    finally:
        await jp_fetch("api", "sessions", session["id"], method="DELETE")
