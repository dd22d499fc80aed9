"""GPU requests are checked against this node's GPUs (through jupyter_air.gpu, here a fake NVML) at submit time."""

from __future__ import annotations

import getpass
import re

import psutil
import pytest
from workload_helpers import write_workload

from jupyter_air.cli import main
from jupyter_air.workloads.state.ledger import GpuLedger
from jupyter_air.workloads.state.store import JobStore
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


def test_jobs_queue_for_the_gpus_of_the_ledger_say_why_and_are_canceled_while_queued(air, tmp_path):
    # Given the demo's 2 simulated GPUs, a 2-GPU job holding them, and a 1-GPU job behind it
    air.env["JUPYTER_AIR_GPU_SOURCE"] = "simulated"
    seen = f"echo $CUDA_VISIBLE_DEVICES > {tmp_path}/$AIR_JOB_RUN_ID.gpus"
    wait = f"{seen}; while [ ! -e {tmp_path}/go ]; do sleep 0.2; done"
    first = air.submit(write_workload(tmp_path, "a.yaml", command=wait, compute={"num_accelerators": 2}))
    air.wait(first, lambda job: job["status"] == "RUNNING")
    queued = air.submit(write_workload(tmp_path, "b.yaml", command=wait, compute={"num_accelerators": 1}))
    canceled = air.submit(write_workload(tmp_path, "c.yaml", command=wait, compute={"num_accelerators": 1}))

    # Then the waiting jobs say their place in line and which job holds the GPUs since when
    job = air.wait(queued, lambda job: (job["error"] or "").startswith("waiting for GPUs"))
    assert job["status"] == "PENDING"
    assert f"1st in line for 1 GPU; held by {getpass.getuser()}'s job {first} since " in job["error"]
    assert "(GPU 0,1)" in job["error"]
    assert "2nd in line" in air.wait(canceled, lambda job: "2nd in line" in (job["error"] or ""))["error"]
    assert re.search(r"Waiting: +waiting for GPUs: 1st in line", air("get", queued, check=True).stdout)
    line = air.json("queue")
    assert [(c["label"], c["gpus"]) for c in line["held"]] == [(first, [0, 1])]
    assert [(c["position"], c["label"], c["count"]) for c in line["queued"]] == [(1, queued, 1), (2, canceled, 1)]
    table = air("queue", check=True).stdout
    assert "Holding GPUs" in table and "Waiting, in the order they will start" in table
    assert re.search(rf"^1 +{getpass.getuser()} +job +{queued} +1 ", table, re.M)
    assert re.search(rf"^GPU-hours in the last 24 h, which order the line: {getpass.getuser()} \d+\.\d\d$", table, re.M)
    # And with the admin's quota of 2 claims in line per user, a third is refused when submitted, creating nothing
    air.env["AIR_QUEUE_QUOTA"] = "2"
    refused = air("run", "-f", str(write_workload(tmp_path, "d.yaml", command=wait, compute={"num_accelerators": 1})))
    assert refused.returncode == 2 and "the quota of queued work per user (AIR_QUEUE_QUOTA=2)" in refused.stderr
    assert f"{getpass.getuser()} has 2 claim(s) waiting for GPUs" in refused.stderr and "d.yaml:" in refused.stderr
    assert len(air.json("list", "--all-status")) == 3
    del air.env["AIR_QUEUE_QUOTA"]

    # When the last one is canceled while queued, and the first ends
    assert air.json("cancel", canceled)[0]["status"] == "CANCELED"
    (tmp_path / "go").touch()

    # Then the queued job gets a GPU the first one held, and every job saw only the GPUs it held
    assert air.wait(queued)["status"] == "SUCCEEDED"
    assert air.wait(first)["status"] == "SUCCEEDED"
    assert (tmp_path / f"{first}.gpus").read_text().split() == ["0,1"]
    assert (tmp_path / f"{queued}.gpus").read_text().split() == ["0"]
    assert not (tmp_path / f"{canceled}.gpus").exists()
    assert air.job(canceled)["status"] == "CANCELED"
    assert GpuLedger(JobStore(air.home)).queue() == ([], [])


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


@pytest.mark.parametrize("gpu_source_env", ["simulated"])
def test_a_job_over_the_admins_gpu_quota_is_refused_at_submit_and_creates_nothing(
    air, tmp_path, fake_nvml, capsys, monkeypatch
):
    # Given an admin's quota of 1 GPU at once per user, and a workload asking for 2 (on line 4 of its file)
    monkeypatch.setenv("AIR_GPU_QUOTA", "1")
    path = tmp_path / "two.yaml"
    path.write_text("experiment_name: two\ncommand: echo hi\ncompute:\n  num_accelerators: 2\n")

    # When it is submitted, Then it is refused (status 2) at that line, naming the quota and its setting
    assert main(["run", "-f", str(path)]) == 2
    err = capsys.readouterr().err
    assert f"{path}:4: compute.num_accelerators: 2 GPU(s) requested, over the quota of 1 GPU(s) at once" in err
    assert "(AIR_GPU_QUOTA); ask for at most 1" in err and not (air.home / "jobs.db").exists()

    # And a malformed quota is said to be one, with how to fix it
    monkeypatch.setenv("AIR_GPU_QUOTA", "two")
    assert main(["run", "-f", str(path)]) == 2
    assert (
        "AIR_GPU_QUOTA='two' is not a whole number: set it to the limit per user, or unset it"
        in capsys.readouterr().err
    )


def test_a_job_whose_supervisor_is_killed_keeps_its_gpus_until_its_command_is_gone(air, tmp_path):
    # Given the demo's 2 simulated GPUs held by a job, and another job waiting for both
    air.env["JUPYTER_AIR_GPU_SOURCE"] = "simulated"
    seen = f"echo $CUDA_VISIBLE_DEVICES > {tmp_path}/$AIR_JOB_RUN_ID.gpus"
    first = air.submit(
        write_workload(tmp_path, "a.yaml", command=f"{seen}; sleep 300", compute={"num_accelerators": 2})
    )
    air.wait(first, lambda job: (tmp_path / f"{first}.gpus").exists())
    second = air.submit(write_workload(tmp_path, "b.yaml", command=seen, compute={"num_accelerators": 2}))
    air.wait(second, lambda job: "1st in line" in (job["error"] or ""))

    # When the first job's supervisor is killed with SIGKILL (as by the OOM killer), its command still running
    supervisor = next(
        p for p in air.processes() if first in " ".join(p.cmdline()) and "supervisor" in " ".join(p.cmdline())
    )
    command = next(p for p in air.processes() if "sleep 300" in " ".join(p.cmdline()))
    supervisor.kill()
    psutil.wait_procs([supervisor], timeout=10)

    # Then the GPUs stay with the command that still runs on them
    ledger = GpuLedger(JobStore(air.home))
    held, queued = ledger.queue()
    assert [c.claim_id for c in held] == [first] and [c.claim_id for c in queued] == [second]

    # When the command is gone too, Then the job waiting gets both GPUs and runs
    command.kill()
    psutil.wait_procs([command], timeout=10)
    assert air.wait(second)["status"] == "SUCCEEDED"
    assert (tmp_path / f"{second}.gpus").read_text().split() == ["0,1"]
    assert air.job(first)["status"] == "FAILED"
