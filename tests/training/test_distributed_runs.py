"""Which MLflow run a call records into: experiment rules, nested runs, resumed runs, worker environment."""

from __future__ import annotations

import os

import mlflow
import pytest

from jupyter_air import distributed

pytestmark = pytest.mark.usefixtures("no_orphans")


def mlflow_env():
    return {k: os.environ.get(k) for k in ("MLFLOW_TRACKING_URI", "MLFLOW_EXPERIMENT_ID", "MLFLOW_RUN_ID")}


def call_once(**options):
    return distributed(mlflow_env, gpus=2, log_system_metrics=False, **options).distributed()


def test_experiment_from_set_experiment_then_env_name_then_notebook_default(store, runs_of, monkeypatch):
    # Given mlflow.set_experiment() in the kernel, When a call runs, Then its run is in that experiment
    mlflow.set_experiment("runs-chosen-in-kernel")
    call_once()
    assert len(runs_of("runs-chosen-in-kernel")) == 1

    # Given no kernel choice but MLFLOW_EXPERIMENT_NAME, Then that experiment
    monkeypatch.setattr(mlflow.tracking.fluent, "_active_experiment_id", None)
    monkeypatch.delenv("MLFLOW_EXPERIMENT_ID")
    monkeypatch.setenv("MLFLOW_EXPERIMENT_NAME", "runs-from-env")
    call_once()
    assert len(runs_of("runs-from-env")) == 1

    # Given nothing chosen, in a notebook of a hub user, Then /Users/<user>/<notebook name>
    monkeypatch.delenv("MLFLOW_EXPERIMENT_NAME")
    monkeypatch.setenv("JUPYTERHUB_USER", "alice")
    monkeypatch.setenv("JPY_SESSION_NAME", "projects/my model.ipynb")
    call_once()
    (run,) = runs_of("/Users/alice/my model")
    assert run.data.tags["air.notebook_path"] == "projects/my model.ipynb"
    assert run.data.tags["mlflow.source.type"] == "NOTEBOOK"

    # Given an explicit experiment=, Then it wins over every other rule
    call_once(experiment="runs-explicit")
    assert len(runs_of("runs-explicit")) == 1


def test_workers_get_the_run_and_a_call_inside_an_active_run_is_its_child(store, runs_of):
    # Given a run active in the kernel
    experiment_id = store.create_experiment("runs-nested")
    with mlflow.start_run(experiment_id=experiment_id) as parent:
        # When a call runs
        results = call_once()

    # Then its run is a child of the active run, in the parent's experiment
    child = next(r for r in runs_of("runs-nested") if r.info.run_id != parent.info.run_id)
    assert child.data.tags["mlflow.parentRunId"] == parent.info.run_id
    # And every rank got the tracking URI, the experiment and the child run
    expected = {
        "MLFLOW_TRACKING_URI": os.environ["MLFLOW_TRACKING_URI"],
        "MLFLOW_EXPERIMENT_ID": experiment_id,
        "MLFLOW_RUN_ID": child.info.run_id,
    }
    assert results == [expected, expected]


def test_mlflow_run_id_in_the_kernel_is_resumed(store, runs_of, monkeypatch):
    # Given a finished run named by MLFLOW_RUN_ID in the kernel's environment
    experiment_id = store.create_experiment("runs-resumed")
    existing = store.create_run(experiment_id, run_name="resume-me")
    store.set_terminated(existing.info.run_id, "FAILED")
    monkeypatch.setenv("MLFLOW_RUN_ID", existing.info.run_id)

    # When a call runs
    results = call_once()

    # Then no run was created; the existing one received the call and ends FINISHED
    (run,) = runs_of("runs-resumed")
    assert run.info.run_id == existing.info.run_id
    assert run.info.status == "FINISHED"
    assert run.data.tags["air.source"] == "distributed"
    assert results[0]["MLFLOW_RUN_ID"] == existing.info.run_id
