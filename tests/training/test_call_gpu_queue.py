"""A notebook call takes its GPUs from the machine's GPU ledger, as jobs do: it waits in line behind a job holding
them (or, with ``wait=False``, is refused with who holds them), and its ranks see only the GPUs it holds."""

from __future__ import annotations

import getpass
import json
import os
import subprocess
import sys
import threading

import pytest
from waiting import wait_for

from jupyter_air import distributed
from jupyter_air.training import gpu_claim
from jupyter_air.training.gpu_claim import GpusBusy
from jupyter_air.workloads.state.ledger import GpuLedger
from jupyter_air.workloads.state.store import JobStore

pytestmark = pytest.mark.usefixtures("no_orphans")


def gpu_environment():
    return {k: os.environ.get(k) for k in ("CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER")}


def air(*args: str) -> str:
    done = subprocess.run([sys.executable, "-m", "jupyter_air.cli", *args], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_a_call_waits_in_line_behind_a_job_holding_the_gpus_then_runs_on_the_one_it_holds(
    store, runs_of, tmp_path, monkeypatch
):
    # Given the demo's 2 simulated GPUs, both held by a running job
    monkeypatch.setenv("JUPYTER_AIR_GPU_SOURCE", "simulated")
    workload = tmp_path / "holds-both.yaml"
    workload.write_text(
        f"experiment_name: gpu-queue-job\ncommand: while [ ! -e {tmp_path}/go ]; do sleep 0.2; done\n"
        "compute:\n  num_accelerators: 2\n"
    )
    job = json.loads(air("run", "-f", str(workload), "-o", "json"))["job_run_id"]
    ledger = GpuLedger(JobStore(os.environ["AIR_HOME"]))
    try:
        wait_for(lambda: ledger.queue()[0], "the job to hold its GPUs")

        # When a call asks not to wait, Then it is refused with who holds the GPUs, and no run is created
        refusal = rf"wait=False\): 1st in line for 1 GPU; held by {getpass.getuser()}'s job {job}"
        with pytest.raises(GpusBusy, match=refusal):
            distributed(gpu_environment, gpus=1, wait=False, experiment="gpu-queue-refused").distributed()
        assert store.get_experiment_by_name("gpu-queue-refused") is None

        # When a call that waits is made, Then it is queued behind the job
        results = []
        caller = threading.Thread(
            target=lambda: results.extend(distributed(gpu_environment, gpus=1, experiment="gpu-queue").distributed())
        )
        caller.start()
        queued = wait_for(lambda: ledger.queue()[1], "the call to queue")
        assert [(c.kind, c.label, c.count) for c in queued] == [("call", "gpu_environment", 1)]
        assert caller.is_alive()
    finally:
        (tmp_path / "go").touch()  # the job ends and gives its GPUs back

    # Then the call runs once the job ended, on the GPU it was given, and gives it back
    caller.join(120)
    assert results == [{"CUDA_VISIBLE_DEVICES": "0", "CUDA_DEVICE_ORDER": "PCI_BUS_ID"}]
    assert runs_of("gpu-queue")[0].info.status == "FINISHED"
    assert ledger.queue() == ([], [])
    assert wait_for(lambda: json.loads(air("get", job, "-o", "json"))["status"] == "SUCCEEDED", "the job to end")


def test_cpu_ranks_on_a_machine_with_real_gpus_hold_none_and_the_demos_simulated_ones_are_claimed(
    air_home, fake_nvml, monkeypatch
):
    # Given a machine whose NVML lists 2 GPUs (here a fake NVML) but whose PyTorch drives none (a CPU build)
    monkeypatch.setenv("AIR_HOME", str(air_home))
    ledger = GpuLedger(JobStore(air_home))

    # When a call starts 2 CPU ranks, Then it holds no GPU: other work keeps them
    assert gpu_claim.take(2, 0, "cpu-ranks", False, print) == gpu_claim.HeldGpus()
    assert ledger.queue() == ([], [])

    # When its ranks drive 1 GPU, Then it holds 1, which its ranks see, until it gives it back
    held = gpu_claim.take(None, 1, "one-gpu", False, print)
    assert held.gpus == (0,) and held.environment == {"CUDA_VISIBLE_DEVICES": "0", "CUDA_DEVICE_ORDER": "PCI_BUS_ID"}
    assert [c.label for c in ledger.queue()[0]] == ["one-gpu"]
    held.release()

    # Given the kernel limited to GPU 1, Then the call takes GPU 1
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1")
    held = gpu_claim.take(None, 1, "limited", False, print)
    assert held.gpus == (1,)
    held.release()

    # Given the demo's simulated GPUs, which no rank drives, Then a call claims what it asks for, as on real ones
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES")
    monkeypatch.setenv("JUPYTER_AIR_GPU_SOURCE", "simulated")
    held = gpu_claim.take(2, 0, "demo", False, print)
    assert held.gpus == (0, 1)
    held.release()
    assert ledger.queue() == ([], [])
