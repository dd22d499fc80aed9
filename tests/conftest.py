"""Shared fixtures: a real Jupyter server with jupyter_air enabled, driven by a fake pynvml."""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

import pytest
from fake_pynvml import FakeGpu, FakeNvml

# at once: the environment Ray reads, before anything imports Ray
from ray_cluster import LocalCluster, free_parked, free_port

pytest_plugins = ["pytest_jupyter.jupyter_server", "store_fixtures", "signal_guard"]


@pytest.fixture(autouse=True, scope="session")
def temp_working_directory(tmp_path_factory):
    """Run every test from a temp folder: what a library writes relative to the working directory (MLflow's
    default ./mlruns for experiments created without an artifact location) never lands in the repository."""
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(tmp_path_factory.mktemp("cwd"))
        yield


@pytest.fixture(autouse=True, scope="session")
def default_air_home(tmp_path_factory):
    """An AIR_HOME in the session's temp folder for whatever names none (a kernel, a server, `air`): never the
    default ~/.jupyter_air of the account running the tests. Tests that need their own set it."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("AIR_HOME", str(tmp_path_factory.mktemp("default-air-home")))
        yield


@pytest.fixture(autouse=True, scope="session")
def stop_resident_processes(tmp_path_factory):
    """AIR_HOME's MLflow server and fork server zygote outlive whoever started them, by design: those of this
    session's AIR_HOMEs are stopped at its end (and, should the session die first, they stop after 10 idle
    minutes)."""
    from resident_servers import stop_all

    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("AIR_MLFLOW_IDLE_SECONDS", os.environ.get("AIR_MLFLOW_IDLE_SECONDS", "600"))
        patch.setenv("AIR_FORKS_IDLE_SECONDS", os.environ.get("AIR_FORKS_IDLE_SECONDS", "600"))
        yield
        stop_all(tmp_path_factory.getbasetemp())


@pytest.fixture(autouse=True)
def restore_gpu_source_environment(monkeypatch):
    """A Jupyter server exports its GPU source, public URL, Ray address and tracking URI to its kernels through the
    environment: undo that per test."""
    from jupyter_air.cluster.address import RAY_ADDRESS_ENV
    from jupyter_air.gpu.sources import SIMULATED_GPUS_ENV, SOURCE_ENV
    from jupyter_air.tracking.links import PUBLIC_URL_ENV

    for name in (SOURCE_ENV, SIMULATED_GPUS_ENV, PUBLIC_URL_ENV, RAY_ADDRESS_ENV, "MLFLOW_TRACKING_URI"):
        monkeypatch.setenv(name, os.environ.get(name, ""))  # records the value to put back after the test
        if not os.environ[name]:
            monkeypatch.delenv(name)


@pytest.fixture
def shared_tmp():
    """A temp folder other local users (``nobody``) may enter: pytest's own are root-only."""
    folder = Path(tempfile.mkdtemp(prefix="air-shared-"))
    folder.chmod(0o755)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def fake_gpus() -> list[FakeGpu]:
    """The GPUs the fake NVML reports; override or mutate in a test."""
    return [FakeGpu(), FakeGpu(utilization_percent=90, temperature_celsius=71, power_milliwatts=400_000)]


@pytest.fixture
def nvml_init_error() -> str | None:
    """Name of the NVML error ``nvmlInit`` raises (e.g. ``"LibraryNotFound"``), or None."""
    return None


@pytest.fixture
def gpu_source_env() -> str | None:
    """Value of JUPYTER_AIR_GPU_SOURCE while the test server starts (unset when None)."""
    return None


@pytest.fixture
def fake_nvml(monkeypatch, fake_gpus, nvml_init_error, gpu_source_env) -> FakeNvml:
    """The fake installed as ``pynvml``; ``nvml_init_error="ImportError"`` makes the package missing."""
    nvml = FakeNvml(fake_gpus, init_error=nvml_init_error)
    monkeypatch.setitem(sys.modules, "pynvml", None if nvml_init_error == "ImportError" else nvml)
    if gpu_source_env is None:
        monkeypatch.delenv("JUPYTER_AIR_GPU_SOURCE", raising=False)
    else:
        monkeypatch.setenv("JUPYTER_AIR_GPU_SOURCE", gpu_source_env)
    return nvml


@pytest.fixture
def air_config() -> dict:
    """``c.JupyterAir`` settings for the test server; fast enough for tests. Nothing resident is started ahead (the
    MLflow UI, the fork server zygote, which imports torch): the tests of those ask for them."""
    return {
        "sample_interval_seconds": 0.05,
        "idle_timeout_seconds": 60,
        "gpu_source": "nvml",
        "mlflow_ui_autostart": False,
        "fork_zygote_at_start": False,
    }


@pytest.fixture
def jp_server_config(air_config, fake_nvml):
    return {"ServerApp": {"jpserver_extensions": {"jupyter_air": True}}, "JupyterAir": air_config}


@pytest.fixture
def gpu(jp_fetch):
    """GET (or POST with ``refresh=True``) the GPU route and decode the JSON payload."""

    async def fetch(since=None, refresh=False, node=None):
        params = {} if since is None else {"since": str(since)}
        if node is not None:
            params["node"] = node
        if refresh:
            response = await jp_fetch("jupyter-air", "gpu", "refresh", method="POST", body=b"", params=params)
        else:
            response = await jp_fetch("jupyter-air", "gpu", params=params)
        assert response.code == 200
        return json.loads(response.body)

    return fetch


@pytest.fixture(scope="session")
def ray_cluster(tmp_path_factory):
    """A Ray cluster on loopback for the session: a head (the driver's node, no GPU, serving Ray Client and running
    the job server on 127.0.0.1) and two nodes with 2 fake GPUs each. Its processes see a temporary AIR_HOME and
    simulated GPUs; every one is killed at the end."""
    environment = {"AIR_HOME": str(tmp_path_factory.mktemp("cluster-home")), "JUPYTER_AIR_GPU_SOURCE": "simulated"}
    cluster = LocalCluster(client_port=free_port(), environment=environment, dashboard=True)
    try:
        cluster.add_node()
        cluster.add_node()
        cluster.wait_for_nodes()
    except BaseException:
        cluster.shutdown()
        raise
    yield cluster
    cluster.shutdown()


@pytest.fixture(scope="module")
def ray_driver(ray_cluster):
    """At the end of a module, free the nodes kept for the next call (a kernel's, and any a remote call parked) and
    leave the cluster: later tests run in a process that is no Ray driver (no Ray socket, no actor holding GPUs)."""
    yield
    from jupyter_air.cluster.connect import disconnect
    from jupyter_air.training import release_nodes

    release_nodes()
    free_parked(ray_cluster.address)
    disconnect()
