"""Fixtures for the `air` workload tests: AIR_HOME and an MLflow store in temp dirs, real processes."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from workload_helpers import make_air

from jupyter_air.tracking import resident


@pytest.fixture(scope="session")
def local_tracking_uri(tmp_path_factory) -> str:
    """The session's MLflow store read in place (a SQLite file), its tables created once (migrations take seconds)."""
    uri = f"sqlite:///{tmp_path_factory.mktemp('mlflow') / 'mlflow.db'}"
    from mlflow.tracking import MlflowClient

    MlflowClient(uri).search_experiments()
    return uri


@pytest.fixture(scope="session")
def local_store_server(local_tracking_uri, tmp_path_factory) -> Path:
    """The record of a resident MLflow server of the session's local store, answering: a Jupyter server's UI starts
    one for its store, and the job supervisors of an AIR_HOME that records it take its REST API instead of importing
    MLflow (about 2.4 CPU-seconds each). Stopped at the session's end with the other resident processes."""
    home = tmp_path_factory.mktemp("local-store-home")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("AIR_HOME", str(home))
        server = resident.ensure(local_tracking_uri)
        deadline = time.monotonic() + 120
        while not server.answers() and server.alive() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert server.answers(), "the local store's resident MLflow server did not answer"
        return resident.record_path(local_tracking_uri, home)


@pytest.fixture(scope="module")
def tracking_uri(request) -> str:
    """Where a module's jobs track: the session's tracking server (so their supervisors take MLflow's REST API, not
    MLflow's client: about 2 CPU-seconds each), or for a module marked `local_store` (run links
    through the Jupyter server's MLflow UI, job grants that grant the experiment, a local store's own server) the
    session's store read in place."""
    local = request.node.get_closest_marker("local_store") is not None
    return request.getfixturevalue("local_tracking_uri" if local else "served_tracking_uri")


@pytest.fixture
def air(request, tmp_path, tracking_uri, monkeypatch):
    """A fresh AIR_HOME per test; in-process `main()` calls see the same environment. In a `local_store` module it
    records the local store's resident server (:func:`local_store_server`), as a Jupyter server's UI would have
    started it."""
    monkeypatch.setenv("AIR_HOME", str(tmp_path / "air"))
    monkeypatch.setenv("MLFLOW_TRACKING_URI", tracking_uri)
    local = request.node.get_closest_marker("local_store") is not None
    server = request.getfixturevalue("local_store_server") if local else None
    yield from make_air(tmp_path / "air", tracking_uri, server)


@pytest.fixture(scope="module")
def module_air(tmp_path_factory, tracking_uri):
    """One AIR_HOME shared by a module's tests, for jobs that several tests inspect."""
    yield from make_air(tmp_path_factory.mktemp("air"), tracking_uri)


@pytest.fixture(scope="module")
def mlflow_client(tracking_uri):
    from mlflow.tracking import MlflowClient

    return MlflowClient(tracking_uri)
