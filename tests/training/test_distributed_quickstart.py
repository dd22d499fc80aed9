"""The quickstart notebook in examples/ runs as shipped, in a real kernel, so it never rots."""

from __future__ import annotations

import os
import pathlib
import shutil
import sys

import nbformat
import pytest
from nbclient import NotebookClient
from notebook_helpers import outputs_text

REPO_ROOT = pathlib.Path(__file__).resolve().parents[2]


@pytest.mark.usefixtures("no_orphans")
def test_the_quickstart_notebook_runs_as_shipped(store, runs_of, tmp_path, monkeypatch):
    # Given a copy of examples/ (the notebook, its workloads), the demo's simulated GPUs, and the venv's `air`
    folder = tmp_path / "examples"
    shutil.copytree(REPO_ROOT / "examples", folder)
    monkeypatch.setenv("JUPYTER_AIR_GPU_SOURCE", "simulated")
    monkeypatch.setenv("JPY_SESSION_NAME", "examples/quickstart.ipynb")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(REPO_ROOT), os.environ.get("PYTHONPATH")])))
    monkeypatch.setenv("PATH", os.pathsep.join([os.path.dirname(sys.executable), os.environ["PATH"]]))
    nb = nbformat.read(folder / "quickstart.ipynb", as_version=4)

    # When a real kernel runs every cell
    NotebookClient(nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(folder)}}).execute()

    # Then no cell failed, each step showed what the notebook says it shows, and the text tours the JupyterLab views
    prose = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    for view in ("Experiment panel", "Logs view", "Stop", "Status bar", "left sidebar", "right sidebar"):
        assert view in prose
    code = [c for c in nb.cells if c.cell_type == "code"]
    outputs = [outputs_text(c) for c in code]
    assert not [o for c in code for o in c.outputs if o.output_type == "error"]
    assert "source: simulated, NOT real hardware" in outputs[1]
    assert "tracked-cell" in outputs[2] and "finished" in outputs[2]
    assert "[rank 1] rank 1: final loss" in outputs[4] and "finished" in outputs[4]
    assert "[rank 1] rank 1: final loss" in outputs[5] and "finished" in outputs[5]
    assert "hello from air" in outputs[6] and "SUCCEEDED" in outputs[6]
    assert "final loss" in outputs[7] and "SUCCEEDED" in outputs[7]
    # (the list shows the AIR_HOME's latest jobs: other tests' too, in this session's shared AIR_HOME)
    listed = [line for line in outputs[8].splitlines() if "quickstart-workloads" in line]
    assert len(listed) == 2 and all("SUCCEEDED" in line for line in listed)
    assert "stop-me" in outputs[9] and "finished" in outputs[9] and "nobody pressed Stop" in outputs[9]
    # And the runs are in the store: the cells, the distributed calls, the plain MLflow run with the call nested in
    # it, and the workloads' attempts
    runs = runs_of("quickstart")
    names = sorted(r.info.run_name for r in runs)
    assert names == ["ddp-linear", "ddp-linear", "plain-mlflow", "stop-me", "tracked-cell"]
    (plain,) = [r for r in runs if r.info.run_name == "plain-mlflow"]
    assert (
        plain.data.metrics == {"toy_loss": 0.05} and plain.data.tags["air.notebook_path"] == "examples/quickstart.ipynb"
    )
    nested = [r for r in runs if r.data.tags.get("mlflow.parentRunId") == plain.info.run_id]
    assert [r.info.run_name for r in nested] == ["ddp-linear"]
    assert {r.info.run_name for r in runs_of("quickstart-workloads")} == {"quickstart-workloads", "linear-fit"}
