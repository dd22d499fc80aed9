"""The resident MLflow server's entry point refuses what would make it remove a folder not its own."""

from __future__ import annotations

import pytest

from jupyter_air.tracking import ui_server


def test_a_socket_outside_a_folder_made_for_it_is_refused_and_nothing_is_removed(tmp_path):
    # Given a user's folder with a file in it
    (tmp_path / "notes.txt").write_text("mine")

    # When the server is started by hand with its socket there (it removes its socket's folder when it stops)
    with pytest.raises(SystemExit) as refused:
        ui_server.main([str(tmp_path / "mlflow.sock"), f"sqlite:///{tmp_path / 'mlflow.db'}", str(tmp_path / "r.json")])

    # Then it says why and how it is started, and the folder keeps its file, with nothing added
    assert "not in a socket folder made for the MLflow UI (jupyter-air-mlflow-*)" in str(refused.value.code)
    assert "resident.ensure" in str(refused.value.code)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"]
