"""On real NVIDIA GPUs (``pytest -m gpu``): NCCL across every GPU, one rank per GPU, real NVML metrics."""

from __future__ import annotations

import os

import pytest

from jupyter_air import distributed

pytestmark = [pytest.mark.gpu, pytest.mark.usefixtures("no_orphans")]


def nccl_sum():
    import torch
    import torch.distributed as dist

    dist.init_process_group("nccl")
    device = torch.cuda.current_device()
    value = torch.ones(1, device="cuda") * (dist.get_rank() + 1)
    dist.all_reduce(value)
    dist.destroy_process_group()
    return {"local_rank": int(os.environ["LOCAL_RANK"]), "device": device, "sum": value.item()}


def test_one_rank_per_gpu_with_nccl_even_after_the_kernel_used_cuda(store, runs_of):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device visible to this process")
    # Given a kernel that already initialised CUDA (plain fork would hand the ranks a broken context)
    torch.zeros(1, device="cuda")
    count = torch.cuda.device_count()

    # When a function runs on every GPU (gpus=None)
    results = distributed(nccl_sum, experiment="gpu-nccl").distributed()

    # Then each rank drove its own GPU and NCCL summed across all of them
    assert [r["device"] for r in results] == list(range(count))
    assert all(r["sum"] == count * (count + 1) / 2 for r in results)
    # And the run carries real GPU metrics, temperature included
    (run,) = runs_of("gpu-nccl")
    assert run.data.tags["air.gpus"] == str(count)
    for key in (
        "system/gpu_0_utilization_percentage",
        "system/gpu_0_memory_usage_megabytes",
        "system/gpu_0_temperature_celsius",
    ):
        assert key in run.data.metrics, key
