"""GPU requests are checked against this node's GPUs (through jupyter_air.gpu, here a fake NVML) at submit time."""

from __future__ import annotations

import pytest
from workload_helpers import write_workload

from jupyter_air.cli import main
from jupyter_air.workloads.supervisor.gpus import check_compute, node_gpus


@pytest.mark.parametrize("nvml_init_error", ["LibraryNotFound"])
def test_gpus_requested_on_a_node_without_gpus_exit_2_and_create_nothing(air, tmp_path, fake_nvml, capsys):
    # Given a node where NVML finds no driver, and a workload asking for the default 1 GPU
    path = write_workload(tmp_path, command="echo hi", compute={})

    # When it is submitted
    code = main(["run", "-f", str(path)])

    # Then it is refused with the reason and the CPU alternative, and no job is recorded
    err = capsys.readouterr().err
    assert code == 2
    assert "compute.num_accelerators: 1 GPU(s) requested but this node has none" in err
    assert "libnvidia-ml.so" in err
    assert "num_accelerators: 0 to run on CPU" in err
    assert not (air.home / "jobs.db").exists()


def test_accelerator_type_is_checked_against_gpu_names(fake_nvml):
    # Given two (fake) H100s on this node
    node = node_gpus()
    assert node.indexes == [0, 1]

    # Then matching requests pass and others say what the node has
    assert check_compute(2, "GPU_2xH100", node) is None
    assert check_compute(1, "GPU_H100", node) is None
    assert "needs 4 'H100' GPU(s) but this node has 2" in check_compute(2, "GPU_4xH100", node)
    assert "needs 1 'A100' GPU(s) but this node has 0 (NVIDIA H100 80GB HBM3)" in check_compute(1, "GPU_A100", node)
    assert "3 GPU(s) requested but this node has 2" in check_compute(3, None, node)


def test_wrong_accelerator_type_exits_2(air, tmp_path, fake_nvml, capsys):
    path = write_workload(tmp_path, command="echo hi", compute={"num_accelerators": 1, "accelerator_type": "GPU_A100"})
    assert main(["run", "-f", str(path)]) == 2
    assert "compute.accelerator_type: GPU_A100" in capsys.readouterr().err
    assert not (air.home / "jobs.db").exists()


def test_reservations_never_share_a_gpu(air, tmp_path):
    # Given a store with two active jobs on a 3-GPU node
    from jupyter_air.workloads.state.store import JobStore

    store = JobStore(air.home)
    spec = {"experiment_name": "e", "compute": {"num_accelerators": 2}, "max_retries": 0}
    first = store.create_job(spec, "a.yaml", "me", "local")
    second = store.create_job(spec, "b.yaml", "me", "local")

    # When both reserve two GPUs
    taken = store.reserve_gpus(first.job_run_id, 2, [0, 1, 2])
    refused = store.reserve_gpus(second.job_run_id, 2, [0, 1, 2])

    # Then the second waits until the first ends, then gets the freed GPUs
    assert taken == [0, 1]
    assert refused is None
    store.finish(first.job_run_id, "SUCCEEDED")
    assert store.reserve_gpus(second.job_run_id, 2, [0, 1, 2]) == [0, 1]
    store.finish(second.job_run_id, "SUCCEEDED")


@pytest.mark.parametrize("gpu_source_env", ["simulated"])
def test_the_simulated_gpus_of_a_demo_are_the_cli_s_too_and_said_to_be_simulated(air, tmp_path, fake_nvml, capsys):
    # Given the demo's JUPYTER_AIR_GPU_SOURCE=simulated (2 GPUs) on a node NVML sees differently
    path = write_workload(tmp_path, command="echo hi", compute={"num_accelerators": 2})

    # When a 2-GPU workload is checked
    code = main(["run", "-f", str(path), "--dry-run"])

    # Then the simulated GPUs are the ones counted, and the output says they are not real hardware
    err = capsys.readouterr().err
    assert code == 0
    assert "GPUs checked against the simulated GPU source" in err and "not real hardware" in err


@pytest.mark.parametrize("gpu_source_env", ["simulated"])
def test_too_many_gpus_on_simulated_gpus_is_refused_with_file_line_and_says_simulated(air, tmp_path, fake_nvml, capsys):
    # Given the demo's 2 simulated GPUs, and a workload asking for 3 (on line 3 of its file)
    path = tmp_path / "three.yaml"
    path.write_text("experiment_name: three\ncommand: echo hi\ncompute:\n  num_accelerators: 3\n")

    # When it is submitted, Then it is refused (status 2) at the line that asks, saying the GPUs are simulated
    assert main(["run", "-f", str(path)]) == 2
    err = capsys.readouterr().err
    assert f"{path}:4: compute.num_accelerators: 3 GPU(s) requested but this node has 2 (simulated GPUs" in err
    assert "not real hardware" in err and not (air.home / "jobs.db").exists()
