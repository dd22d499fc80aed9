"""Energy per run: the GPUs' energy logged with the system metrics, from NVML's counter or integrated power."""

from __future__ import annotations

import os
import time

import pytest

from jupyter_air.tracking.lifecycle import ManagedRun
from jupyter_air.tracking.system_metrics import SystemMetrics

RUN_SECONDS = 5.0


@pytest.fixture
def nvml_run(store, fake_nvml, monkeypatch):
    """A run of a real SQLite store on a node whose NVML is the fake (2 GPUs: 210.5 W and 400 W), metrics every s."""
    monkeypatch.setenv("AIR_SYSTEM_METRICS_INTERVAL_SECONDS", "1")
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    experiment_id = store.create_experiment(f"energy-{time.time_ns()}")
    return ManagedRun.create(experiment_id, run_name="energy", tags={})


def _run_for(run: ManagedRun, seconds: float) -> float:
    """Sample the run's system metrics for ``seconds``, end it; the epoch seconds just before sampling began."""
    began = time.time()
    run.start_system_metrics()
    time.sleep(seconds)
    run.end("FINISHED")
    return began


def _final(store, run_id: str, key: str):
    return store.get_metric_history(run_id, key)[-1]


def test_energy_from_the_nvml_counter_is_power_times_time(store, nvml_run, fake_nvml):
    # Given GPUs whose NVML counter adds their constant power (210.5 W and 400 W)
    watts = [gpu.power_milliwatts / 1000 for gpu in fake_nvml.gpus]
    # When a run samples its system metrics for 5 s
    began = _run_for(nvml_run, RUN_SECONDS)
    # Then each GPU's energy is its power times the time it was measured, within 5 %
    run_id = nvml_run.run_id
    total = _final(store, run_id, "system/total_energy_watt_hours")
    seconds = total.timestamp / 1000 - began
    assert seconds >= RUN_SECONDS
    for index, power in enumerate(watts):
        joules = store.get_metric_history(run_id, f"system/gpu_{index}_energy_joules")
        assert len(joules) >= 4  # cumulative, with every sample: it only grows
        assert [m.value for m in joules] == sorted(m.value for m in joules)
        assert joules[-1].value == pytest.approx(power * seconds, rel=0.05)
    # And the total sums them in watt-hours; the tags say how it was measured and that no one else used the GPUs
    assert total.value == pytest.approx(sum(watts) * seconds / 3600, rel=0.05)
    tags = store.get_run(run_id).data.tags
    assert tags["air.energy_method"] == "nvml_energy_counter"
    assert tags["air.energy_exclusive"] == "true"
    assert tags["air.gpu_source"] == "nvml"
    assert fake_nvml.calls["nvmlDeviceGetTotalEnergyConsumption"] >= 2 * 4


def test_energy_without_a_counter_is_the_integral_of_the_sampled_power(store, nvml_run, fake_nvml):
    # Given GPUs older than Volta: no energy counter, power only; and another user's process on GPU 1
    for gpu in fake_nvml.gpus:
        gpu.energy_error = "NotSupported"
    fake_nvml.gpus[1].processes = [(os.getpid(), 1 << 30), (os.getppid(), 1 << 30)]
    watts = [gpu.power_milliwatts / 1000 for gpu in fake_nvml.gpus]
    # When a run samples its system metrics for 5 s
    began = _run_for(nvml_run, RUN_SECONDS)
    # Then the energy is the sampled power integrated over time, within 10 %
    run_id = nvml_run.run_id
    total = _final(store, run_id, "system/total_energy_watt_hours")
    seconds = total.timestamp / 1000 - began
    for index, power in enumerate(watts):
        assert _final(store, run_id, f"system/gpu_{index}_energy_joules").value == pytest.approx(
            power * seconds, rel=0.10
        )
    assert total.value == pytest.approx(sum(watts) * seconds / 3600, rel=0.10)
    # And the tags say so, and that a process outside the run shared its GPU (the board's energy is not all its own)
    tags = store.get_run(run_id).data.tags
    assert tags["air.energy_method"] == "power_integral"
    assert tags["air.energy_exclusive"] == "false"


def test_only_the_runs_gpus_count(store, nvml_run, fake_nvml):
    # Given a job given GPU 1 only, while another process works on GPU 0
    fake_nvml.gpus[0].processes = [(os.getppid(), 1 << 30)]
    # When its run samples for a moment
    nvml_run.start_system_metrics(gpus=["1"])
    time.sleep(0.3)
    nvml_run.end("FINISHED")
    # Then only GPU 1's energy is logged and totalled, and the other GPU's process does not make it shared
    metrics = store.get_run(nvml_run.run_id).data.metrics
    assert "system/gpu_1_energy_joules" in metrics and "system/gpu_0_energy_joules" not in metrics
    total = metrics["system/total_energy_watt_hours"]
    assert total == pytest.approx(metrics["system/gpu_1_energy_joules"] / 3600, abs=1e-6)
    assert store.get_run(nvml_run.run_id).data.tags["air.energy_exclusive"] == "true"


def test_a_multi_node_runs_total_sums_its_nodes(store, nvml_run, fake_nvml):
    # Given two nodes sampling into one run (as the actors of a multi-node call do), one shared with another process
    nodes = [SystemMetrics(nvml_run.run_id, 10, node_id=f"node_{n}", tracking_uri=None) for n in range(2)]
    nodes[0].start()
    fake_nvml.gpus[0].processes = [(os.getppid(), 1 << 30)]
    nodes[1].start()
    time.sleep(0.3)
    for node in nodes:
        node.stop()
    # When the driver ends the run (it sampled nothing itself)
    nvml_run.end("FINISHED")
    # Then the run's total is the sum of every node's GPUs, and its tags combine the nodes'
    data = store.get_run(nvml_run.run_id).data
    per_gpu = [v for k, v in data.metrics.items() if k.startswith("system/node_") and k.endswith("_energy_joules")]
    assert len(per_gpu) == 4
    assert data.metrics["system/total_energy_watt_hours"] == pytest.approx(sum(per_gpu) / 3600, abs=1e-6)
    assert data.metrics["system/total_energy_watt_hours"] == pytest.approx(
        data.metrics["system/node_0/total_energy_watt_hours"] + data.metrics["system/node_1/total_energy_watt_hours"],
        abs=2e-6,
    )
    assert data.tags["air.energy_method.node_0"] == "nvml_energy_counter"
    assert data.tags["air.energy_method"] == "nvml_energy_counter"
    assert data.tags["air.energy_exclusive.node_1"] == "false"
    assert data.tags["air.energy_exclusive"] == "false"


def test_simulated_energy_is_labelled_simulated(store, nvml_run, monkeypatch):
    # Given the simulated GPU source
    monkeypatch.setenv("JUPYTER_AIR_GPU_SOURCE", "simulated")
    # When a run samples for a moment
    _run_for(nvml_run, 0.5)
    # Then its energy is the simulated power integrated, and the run says its GPU figures are simulated
    data = store.get_run(nvml_run.run_id).data
    assert data.metrics["system/total_energy_watt_hours"] > 0
    assert data.tags["air.gpu_source"] == "simulated"
    assert data.tags["air.energy_method"] == "power_integral"


def test_the_panels_show_each_runs_energy_and_whether_it_was_simulated(store, nvml_run, monkeypatch):
    from jupyter_air.tracking.runs_query import run_json

    # Given a run measured on NVML's counter, and one on the simulated GPUs
    _run_for(nvml_run, 0.5)
    monkeypatch.setenv("JUPYTER_AIR_GPU_SOURCE", "simulated")
    simulated = ManagedRun.create(nvml_run.experiment_id, run_name="simulated", tags={})
    _run_for(simulated, 0.5)
    # When the panels' run JSON is made of each
    real, fake = (run_json(store.get_run(r.run_id), {}, "/") for r in (nvml_run, simulated))
    # Then each carries its total energy in watt-hours, and only the simulated one says it was simulated
    metrics = [store.get_run(r.run_id).data.metrics for r in (nvml_run, simulated)]
    assert real["energy_watt_hours"] == metrics[0]["system/total_energy_watt_hours"] > 0
    assert fake["energy_watt_hours"] == metrics[1]["system/total_energy_watt_hours"] > 0
    assert real["gpus_simulated"] is False and fake["gpus_simulated"] is True


@pytest.mark.usefixtures("no_orphans")
def test_a_cpu_call_logs_no_gpu_energy_in_the_kernel_and_as_a_job(store, runs_of, monkeypatch):
    from jupyter_air import distributed

    # Given a node with (simulated) GPUs and a call on 2 CPU ranks
    monkeypatch.setenv("JUPYTER_AIR_GPU_SOURCE", "simulated")
    monkeypatch.setenv("AIR_SYSTEM_METRICS_INTERVAL_SECONDS", "1")

    @distributed(gpus=2, experiment="energy-cpu-call")
    def train():
        import time

        time.sleep(1.5)
        return 0

    # When it runs in the kernel, and as a job
    train.distributed()
    train.distributed(remote=True)

    # Then neither run counts the GPUs its ranks were not given, wherever it ran
    runs = runs_of("energy-cpu-call")
    assert len(runs) == 2
    for run in runs:
        assert "system/cpu_utilization_percentage" in run.data.metrics
        assert not [k for k in run.data.metrics if "energy" in k], run.data.tags.get("air.remote")
