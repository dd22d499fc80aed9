"""On a real NVIDIA GPU node (`pytest -m gpu`): a workload gets its reserved GPU in CUDA_VISIBLE_DEVICES."""

from __future__ import annotations

import pytest
from workload_helpers import write_workload

from jupyter_air.workloads.supervisor.gpus import node_gpus

pytestmark = pytest.mark.gpu


def test_a_gpu_workload_sees_its_reserved_gpu(air, tmp_path):
    # Given a node with at least one real GPU
    node = node_gpus()
    if not node.gpus:
        pytest.skip(f"no usable GPU: {node.reason}")
    index, name = node.gpus[0]
    model = name.split()[-1] if name else ""

    # When a one-GPU workload naming the node's own GPU model runs
    path = write_workload(
        tmp_path,
        command='echo "devices=$CUDA_VISIBLE_DEVICES"',
        compute={"num_accelerators": 1, "accelerator_type": f"GPU_{model}"} if model else {"num_accelerators": 1},
    )
    job = air.wait(air.submit(path))

    # Then it succeeded with one reserved GPU, exported to the command
    assert job["status"] == "SUCCEEDED", job
    assert len(job["gpus"]) == 1 and job["gpus"][0] in node.indexes
    assert air("logs", job["job_run_id"], check=True).stdout.strip() == f"devices={job['gpus'][0]}"
    assert index in node.indexes
