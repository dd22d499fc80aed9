"""A notebook run headless (nbclient, papermill) has no notebook name from Jupyter: its runs never land in an
experiment named after the kernel's launcher module."""

from __future__ import annotations

import getpass
import os
import pathlib

import nbformat
from nbclient import NotebookClient

REPO_ROOT = pathlib.Path(__file__).resolve().parents[2]
CELL = "%%air_run --no-system-metrics\n1 + 1"


def run_headless(cells: list[str], folder: pathlib.Path) -> None:
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(src) for src in cells])
    NotebookClient(nb, timeout=180, kernel_name="python3", resources={"metadata": {"path": str(folder)}}).execute()


def test_runs_of_a_headless_notebook_go_to_a_clear_default_experiment(store, runs_of, monkeypatch, tmp_path):
    # Given a notebook executed by nbclient, with no notebook name in the kernel's environment
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(REPO_ROOT), os.environ.get("PYTHONPATH")])))
    monkeypatch.delenv("JUPYTERHUB_USER", raising=False)
    user = getpass.getuser()

    # When a tracked cell runs, Then its run is in /Users/<user>/unnamed-notebook, not .../ipykernel_launcher
    run_headless(["%load_ext jupyter_air", CELL], tmp_path)
    (run,) = runs_of(f"/Users/{user}/unnamed-notebook")
    assert run.data.tags["mlflow.source.name"] == "unnamed-notebook"
    assert store.get_experiment_by_name(f"/Users/{user}/ipykernel_launcher") is None

    # And when the front end names the notebook's file in the kernel (as VS Code does), that name is used
    named = "__vsc_ipynb_file__ = '/home/me/projects/nightly eval.ipynb'"
    run_headless(["%load_ext jupyter_air", named, CELL], tmp_path)
    assert len(runs_of(f"/Users/{user}/nightly eval")) == 1
