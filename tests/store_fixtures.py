"""Fixtures of the tests that record runs from calls (training, tracking, the run card): one real SQLite MLflow store
per session, a clean environment per test, orphan checks. A plugin of ``conftest.py``, so every test folder has
them."""

from __future__ import annotations

import contextlib
import os
import pathlib
import threading
import time

import psutil
import pytest
from tracking_servers import tracking_server


@pytest.fixture(scope="session")
def air_home(tmp_path_factory) -> pathlib.Path:
    """One AIR_HOME (and so one SQLite store) for every test here: creating a store costs seconds."""
    return tmp_path_factory.mktemp("air-home")


@pytest.fixture(scope="session")
def mlflow_server(tmp_path_factory):
    """The session's plain `mlflow server` over HTTP on 127.0.0.1 (SQLite, served artifacts), as a team's tracking
    server is; one per session (per xdist worker), as each takes about 4 CPU-seconds to start. Started at once, so its
    start overlaps the caller's set-up; ``ready()`` waits until it answers."""
    with tracking_server(tmp_path_factory.mktemp("mlflow-server")) as server:
        yield server


@pytest.fixture(scope="session")
def served_tracking_uri(mlflow_server) -> str:
    """The http:// URI of :func:`mlflow_server`, answering."""
    return mlflow_server.ready()


@pytest.fixture
def store(air_home, tmp_path, monkeypatch):
    """The real MLflow store under AIR_HOME, with nothing in the environment choosing a run or experiment."""
    from jupyter_air.tracking.store import client

    monkeypatch.setenv("AIR_HOME", str(air_home))
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{air_home / 'mlflow.db'}")
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(tmp_path / "runtime"))
    for name in (
        "MLFLOW_RUN_ID",
        "MLFLOW_EXPERIMENT_NAME",
        "MLFLOW_EXPERIMENT_ID",
        "JPY_SESSION_NAME",
        "JUPYTERHUB_USER",
    ):
        monkeypatch.delenv(name, raising=False)
    import mlflow.tracking.fluent

    monkeypatch.setattr(mlflow.tracking.fluent, "_active_experiment_id", None)
    yield client()
    while mlflow.active_run():
        mlflow.end_run()


def _started_by_tests(air_home: pathlib.Path) -> dict[int, str]:
    """Processes anywhere on the machine (orphans get re-parented) started with this test AIR_HOME,
    leaving out this process's own multiprocessing fork server and resource tracker, which live as
    long as this process by design, and AIR_HOME's resident MLflow server (it stops when idle)."""
    from resident_servers import resident_pids

    me = os.getpid()
    resident = resident_pids(air_home)
    found = {}
    for proc in psutil.process_iter(["pid", "ppid", "cmdline"]):
        try:
            if proc.pid == me or proc.pid in resident or proc.environ().get("AIR_HOME") != str(air_home):
                continue
        except psutil.Error:
            continue
        cmdline = " ".join(proc.info["cmdline"] or [])
        if proc.info["ppid"] == me and ("forkserver" in cmdline or "resource_tracker" in cmdline):
            continue
        found[proc.pid] = cmdline
    return found


@pytest.fixture
def no_orphans(air_home):
    """Fail the test if any process it started is still alive shortly after it ends (counted with psutil), or a
    thread that a call starts in this process and that must end with it."""
    before = set(_started_by_tests(air_home))
    threads_before = set(threading.enumerate())
    yield
    deadline = time.monotonic() + 15  # a fork server notices its owner is gone within a tick, a busy machine later
    while (left := {p: c for p, c in _started_by_tests(air_home).items() if p not in before}) and (
        time.monotonic() < deadline
    ):
        time.sleep(0.1)
    for pid in left:  # fail, but leave nothing running for the next tests
        with contextlib.suppress(psutil.Error):
            psutil.Process(pid).kill()
    assert not left, f"{len(left)} process(es) left behind: {left}"
    while (threads := _call_threads(threads_before)) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not threads, f"thread(s) of a call still running: {threads}"


def _call_threads(before: set[threading.Thread]) -> list[str]:
    """The threads a call starts in the caller's process that must end with it (its Stop watcher, its run's
    system-metrics sampler), started since ``before``."""
    return [
        t.name
        for t in threading.enumerate()
        if t not in before and (t.name == "air-stop-watcher" or t.name.startswith("air-system-metrics-"))
    ]


@pytest.fixture
def runs_of(store):
    """Every run of an experiment (by name), newest first."""

    def find(experiment_name: str):
        experiment = store.get_experiment_by_name(experiment_name)
        assert experiment is not None, f"experiment {experiment_name!r} was not created"
        return store.search_runs([experiment.experiment_id], order_by=["attributes.start_time DESC"])

    return find


@pytest.fixture
def artifact_text(store, tmp_path):
    """The text of one artifact of a run (downloaded into the test's folder: MLflow's default is a new temp folder
    that nothing removes)."""
    import mlflow.artifacts

    def read(run_id: str, path: str) -> str:
        local = mlflow.artifacts.download_artifacts(
            run_id=run_id,
            artifact_path=path,
            tracking_uri=os.environ["MLFLOW_TRACKING_URI"],
            dst_path=str(tmp_path),
        )
        return pathlib.Path(local).read_text()

    return read
