"""Which notebook holds my GPU: GPU processes attributed to kernels of this server."""

from __future__ import annotations

import json
import os
import subprocess
import sys

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
