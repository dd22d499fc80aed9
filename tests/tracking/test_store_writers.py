"""Four processes writing to the embedded SQLite store at once (a notebook's plain MLflow, jupyter_air's calls and
supervisors through AIR_HOME's MLflow server): every write lands, and none says "database is locked"."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys
import uuid

import pytest

from jupyter_air.tracking.store import client

REPO_ROOT = pathlib.Path(__file__).resolve().parents[2]
WRITES = 200
WRITER = """
import sys, time
kind, experiment, name, count = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
if kind == "mlflow":  # a notebook's plain MLflow, straight into the SQLite file
    import mlflow
    mlflow.set_experiment(experiment)
    with mlflow.start_run(run_name=name):
        for step in range(count):
            mlflow.log_metric("step_count", step, step=step)
else:  # jupyter_air's tracker: AIR_HOME's MLflow server once it answers, MLflow's client meanwhile
    from jupyter_air.tracking.entities import Metric
    from jupyter_air.tracking.store import ensure_experiment
    from jupyter_air.tracking.store import tracker
    tracking = tracker()
    run = tracking.create_run(ensure_experiment(experiment, tracking=tracking), run_name=name, tags={})
    for step in range(count):
        metric = Metric("step_count", float(step), int(time.time() * 1000), step)
        tracking.log_batch(run.info.run_id, metrics=[metric])
    tracking.update_run(run.info.run_id, status="FINISHED")
"""


@pytest.mark.usefixtures("no_orphans")
def test_four_writers_at_once_lose_nothing(store, tmp_path):
    # Given the embedded store with their experiment (made first: MLflow 3.17's set_experiment, when another process
    # makes the experiment at the same moment, leaves the active one unset, and its run goes to "Default"),
    # and four writers: two with plain MLflow, two through jupyter_air's tracker
    experiment = f"writers-{uuid.uuid4().hex[:6]}"
    store.create_experiment(experiment)
    kinds = ["mlflow", "air", "mlflow", "air"]
    path = os.pathsep.join(filter(None, [str(REPO_ROOT), os.environ.get("PYTHONPATH")]))
    environment = {**os.environ, "PYTHONPATH": path}

    # When they each log 200 metric values one by one, all at the same time
    writers = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, kind, experiment, f"{kind}-{index}", str(WRITES)],
            env=environment,
            cwd=tmp_path,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for index, kind in enumerate(kinds)
    ]
    outputs = [writer.communicate(timeout=240)[0] for writer in writers]

    # Then each ended well, none said "database is locked", and every value is in the store
    assert [writer.returncode for writer in writers] == [0, 0, 0, 0], outputs
    assert not [out for out in outputs if "locked" in out]
    found = client().get_experiment_by_name(experiment)
    runs = client().search_runs([found.experiment_id])
    assert sorted(r.info.run_name for r in runs) == ["air-1", "air-3", "mlflow-0", "mlflow-2"]
    for run in runs:
        assert run.info.status == "FINISHED"
        history = client().get_metric_history(run.info.run_id, "step_count")
        assert sorted(m.step for m in history) == list(range(WRITES)), run.info.run_name
