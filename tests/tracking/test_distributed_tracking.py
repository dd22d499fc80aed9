"""The shared MLflow plumbing: store location, experiments, run links, the MLflow UI proxy, system metrics."""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys
import time

import pytest

from jupyter_air.tracking import store as air_store
from jupyter_air.tracking.links import NO_LINKS, links, public_url
from jupyter_air.tracking.proxy import mlflow_server
from jupyter_air.tracking.system_metrics import SystemMetrics
from jupyter_air.tracking.ui_server import server_env

REPO_ROOT = pathlib.Path(__file__).resolve().parents[2]


def test_embedded_store_lives_under_air_home(tmp_path, monkeypatch):
    # Given AIR_HOME pointing at a folder that does not exist yet, and no tracking URI
    home = tmp_path / "new home"
    monkeypatch.setenv("AIR_HOME", str(home))
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)

    # Then the folder is created and the store and artifacts live in it
    assert air_store.air_home() == home and home.is_dir()
    assert air_store.tracking_uri() == f"sqlite:///{home / 'mlflow.db'}"
    assert air_store.default_artifact_location() == str(home / "mlartifacts")
    # And an explicit tracking URI wins
    monkeypatch.setenv("MLFLOW_TRACKING_URI", "http://tracking.example:5000")
    assert air_store.tracking_uri() == "http://tracking.example:5000"


def test_ensure_experiment_is_idempotent_and_keeps_artifacts_under_air_home(store, air_home):
    # Given a name never seen, When ensured twice, Then one experiment, artifacts under AIR_HOME
    first = air_store.ensure_experiment("tracking-ensure")
    assert air_store.ensure_experiment("tracking-ensure") == first
    assert store.get_experiment(first).artifact_location == (air_home / "mlartifacts").as_uri()
    # And a deleted experiment is restored rather than failing
    store.delete_experiment(first)
    assert air_store.ensure_experiment("tracking-ensure") == first
    assert store.get_experiment(first).lifecycle_stage == "active"
    with pytest.raises(ValueError, match="experiment name is empty"):
        air_store.ensure_experiment("  ")


def test_run_links(store, monkeypatch, tmp_path):
    # Given an HTTP tracking server, Then the links open the run and its experiment on it
    monkeypatch.setenv("MLFLOW_TRACKING_URI", "https://mlflow.example/")
    found = links("3", "abc")
    assert found.run == "https://mlflow.example/#/experiments/3/runs/abc?workflowType=machine_learning"
    assert found.experiment == "https://mlflow.example/#/experiments/3?workflowType=machine_learning"

    # Given the embedded store and no Jupyter server, Then no link can be known
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{tmp_path / 'x.db'}")
    assert links("3", "abc") == NO_LINKS

    # Given a Jupyter server process that started a kernel process asking for a link
    runtime = pathlib.Path(os.environ["JUPYTER_RUNTIME_DIR"])
    runtime.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}

    def link_from_child(child_env: dict, for_page: bool = True) -> str:
        child = f"from jupyter_air.tracking.links import links; print(links('3', 'abc', for_page={for_page}).run)"
        server = (
            "import json, os, subprocess, sys\n"
            f"path = os.path.join({str(runtime)!r}, f'jpserver-{{os.getpid()}}.json')\n"
            "json.dump({'pid': os.getpid(), 'base_url': '/user/al ice/',"
            " 'url': 'http://127.0.0.1:8888/user/al ice/'}, open(path, 'w'))\n"
            f"out = subprocess.run([sys.executable, '-c', {child!r}], env={child_env!r},"
            " capture_output=True, text=True, check=True).stdout\n"
            "os.remove(path)\n"
            "print(out.strip())\n"
        )
        return subprocess.run(
            [sys.executable, "-c", server], env=env, capture_output=True, text=True, check=True
        ).stdout.strip()

    # Then a kernel's link is the server's open route for the run, a path on the page's own origin (no
    # fragment, so it survives a login)
    assert link_from_child(env) == "/user/al ice/jupyter-air/runs/abc/open"
    # And a process in the server's terminal gets a full URL, the public one when it is known
    assert link_from_child(env, for_page=False) == "http://127.0.0.1:8888/user/al ice/jupyter-air/runs/abc/open"
    public = {**env, "AIR_PUBLIC_URL": "https://gpu.example.org/lab"}
    assert link_from_child(public, for_page=False) == "https://gpu.example.org/lab/jupyter-air/runs/abc/open"
    # And a kernel using another store than the server's gets no (wrong) link
    assert link_from_child({**env, "MLFLOW_TRACKING_URI": f"sqlite:///{tmp_path / 'other.db'}"}) == "None"

    # And a script outside any Jupyter server links to a running server on the same store, in full
    up = "print('up', flush=True); import time; time.sleep(60)"
    server = subprocess.Popen([sys.executable, "-c", up], env=env, stdout=subprocess.PIPE, text=True)
    try:
        # (once it runs: on a busy machine its environment reads empty for a moment after it was started)
        assert server.stdout.readline() == "up\n"
        (runtime / f"jpserver-{server.pid}.json").write_text(
            json.dumps({"pid": server.pid, "base_url": "/", "url": "http://127.0.0.1:8888/"})
        )
        found = links("3", "abc", for_page=False)
        assert found.run == "http://127.0.0.1:8888/jupyter-air/runs/abc/open"
        assert found.experiment == "http://127.0.0.1:8888/jupyter-air/experiments/3/open"
        assert "runtime file" in found.origin
    finally:
        server.kill()
        server.wait()


def test_public_url_comes_from_air_public_url_then_jupyterhub():
    hub = {"JUPYTERHUB_PUBLIC_URL": "https://hub.example.org/", "JUPYTERHUB_SERVICE_PREFIX": "/user/alice/"}
    assert public_url(hub) == ("https://hub.example.org/user/alice/", "JupyterHub's public URL")
    assert public_url({**hub, "AIR_PUBLIC_URL": "https://box.example.org"}) == (
        "https://box.example.org/",
        "AIR_PUBLIC_URL",
    )
    assert public_url({}) == (None, None)


def test_proxy_spec_serves_the_same_store_on_a_unix_socket(store, air_home):
    # Given the embedded store, When jupyter-server-proxy asks for the MLflow server spec
    spec = mlflow_server()

    # Then it proxies to a Unix socket (the resident server's, set per request), with no port or command of its own
    assert spec["unix_socket"] and "port" not in spec and "command" not in spec
    assert spec["absolute_url"] is False
    # And that server serves this store and its registry, with artifacts (proxied uploads too) under AIR_HOME
    env = server_env(air_store.tracking_uri())
    assert env["_MLFLOW_SERVER_FILE_STORE"] == env["_MLFLOW_SERVER_REGISTRY_STORE"] == air_store.tracking_uri()
    assert (
        env["_MLFLOW_SERVER_ARTIFACT_ROOT"]
        == env["_MLFLOW_SERVER_ARTIFACT_DESTINATION"]
        == str(air_home / "mlartifacts")
    )
    assert env["_MLFLOW_SERVER_SERVE_ARTIFACTS"] == "true"


class FakeGpuSource:
    """Stands for jupyter_air's GPU source: two GPUs, one that cannot report its temperature."""

    name, available, reason = "nvml", True, None

    def __init__(self):
        from jupyter_air.gpu.types import DeviceInfo

        self.reads = 0
        self.closed = False
        self.devices = [DeviceInfo(i, f"GPU-{i}", "fake", 8_000_000_000) for i in range(2)]

    def energy_millijoules(self):
        return [None, None]  # no counter: energy is the integral of the power read

    def read(self):
        from jupyter_air.gpu.types import Reading

        self.reads += 1
        return Reading(
            utilization_percent=[40.0, 90.0],
            memory_used_bytes=[2_000_000_000, None],
            memory_total_bytes=[8_000_000_000, 8_000_000_000],
            temperature_celsius=[61.0, None],
            power_watts=[120.5, 300.0],
            errors=[None, None],
            processes=[],
        )

    def close(self):
        self.closed = True


def test_system_metrics_keep_sampling_after_a_worker_ends_the_run(store):
    # Given a run that a worker already ended FINISHED, and a sampler every 0.2 s with a node id
    run = store.create_run(store.create_experiment("tracking-metrics"))
    store.set_terminated(run.info.run_id, "FINISHED")
    source = FakeGpuSource()

    # When it samples until three CPU samples are logged (a second or two; longer on a busy machine)
    def cpu_history():
        return store.get_metric_history(run.info.run_id, "system/node_0/cpu_utilization_percentage")

    with SystemMetrics(run.info.run_id, interval_seconds=0.2, node_id="node_0", gpu_source=source):
        deadline = time.monotonic() + 120
        while len(cpu_history()) < 3 and time.monotonic() < deadline:
            time.sleep(0.2)

    # Then several samples were logged regardless of the run's status, under MLflow's names
    history = cpu_history()
    assert len(history) >= 3
    assert [m.step for m in history] == list(range(len(history)))
    metrics = store.get_run(run.info.run_id).data.metrics
    assert metrics["system/node_0/gpu_0_utilization_percentage"] == 40.0
    assert metrics["system/node_0/gpu_0_temperature_celsius"] == 61.0
    assert metrics["system/node_0/gpu_0_memory_usage_percentage"] == 25.0
    assert metrics["system/node_0/gpu_1_power_usage_watts"] == 300.0
    # And what a GPU cannot report is left out, not logged as zero
    assert "system/node_0/gpu_1_temperature_celsius" not in metrics
    assert "system/node_0/gpu_1_memory_usage_megabytes" not in metrics
    assert not source.closed  # the caller's source stays the caller's


def test_a_run_is_sampled_every_second_at_first_then_every_interval():
    import itertools

    from jupyter_air.tracking.sample_times import sample_delays

    # Given the default 10 s interval, When a run's samples are timed
    delays = list(itertools.islice(sample_delays(10.0), 14))
    times = list(itertools.takewhile(lambda t: t <= 11.0, itertools.accumulate(sample_delays(10.0))))

    # Then the first come every second, then every 2 and 5 s, then every interval: an 11 s run gets 8 samples
    # (and the final one), where it got 1 before; a long run gets 8 more than at the interval alone
    assert delays == [1.0] * 5 + [2.0] * 3 + [5.0] * 2 + [10.0] * 4
    assert times == [1.0, 2.0, 3.0, 4.0, 5.0, 7.0, 9.0, 11.0]
    # And a shorter interval is never stretched
    assert set(itertools.islice(sample_delays(0.2), 20)) == {0.2}


def test_a_call_shorter_than_one_interval_still_gets_a_sample(store):
    # Given a 10 s interval and a node without GPUs (the real NVML source reports none here)
    run = store.create_run(store.create_experiment("tracking-short"))
    metrics = SystemMetrics(run.info.run_id, interval_seconds=10)

    # When it is stopped almost at once
    metrics.start()
    metrics.stop()

    # Then stop() logged one sample
    logged = store.get_run(run.info.run_id).data.metrics
    assert len(store.get_metric_history(run.info.run_id, "system/cpu_utilization_percentage")) == 1
    assert "system/system_memory_usage_megabytes" in logged
    assert not any(key.startswith("system/gpu_") for key in logged)
    with pytest.raises(ValueError, match="interval_seconds must be positive"):
        SystemMetrics("x", interval_seconds=0)
