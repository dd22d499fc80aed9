"""Run cards in a notebook executed headless by a real kernel (nbclient): the saved file is readable and small."""

from __future__ import annotations

import os
import pathlib
import threading
import time

import nbformat
import pytest
from live_runs import live_run_ids, new_live_run
from nbclient import NotebookClient

from jupyter_air.run_card.widget import WIDGET_VIEW_MIMETYPE
from jupyter_air.tracking.stops import request_stop
from jupyter_air.training.tracked import STOPPED

REPO_ROOT = pathlib.Path(__file__).resolve().parents[2]
LINES_PER_RANK = 5000

CHATTY = f"""from jupyter_air import distributed

@distributed(gpus=2, experiment="card-notebook", run_name="chatty")
def chatty(lines):
    import os, mlflow
    rank = int(os.environ["RANK"])
    for i in range(lines):
        print(f"line {{i}} of rank {{rank}}")
    if rank == 0:
        with mlflow.start_run(run_id=os.environ["MLFLOW_RUN_ID"]):
            for step in range(5):
                mlflow.log_metric("train_loss", 1.0 / (step + 1), step=step)
    return rank

chatty.distributed({LINES_PER_RANK})"""

BROKEN = """@distributed(gpus=2, experiment="card-notebook", run_name="broken")
def broken():
    import os
    if os.environ["RANK"] == "1":
        raise ValueError("rank one broke")

broken.distributed()"""


def air_run_until_stopped(marker: pathlib.Path) -> str:
    return (
        "%%air_run --experiment card-notebook --run-name stopped --no-system-metrics\n"
        "import pathlib, time\n"
        f"pathlib.Path({str(marker)!r}).touch()\n"
        "while True:\n"
        "    time.sleep(0.1)"
    )


def outputs_of(cell, output_type: str) -> list:
    return [o for o in cell.outputs if o.output_type == output_type]


@pytest.fixture
def notebook_env(store, monkeypatch, tmp_path):
    """What a kernel started by Jupyter for `work/cards.ipynb` would see (and this checkout importable)."""
    monkeypatch.setenv("JPY_SESSION_NAME", "work/cards.ipynb")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(REPO_ROOT), os.environ.get("PYTHONPATH")])))
    return tmp_path


def stop_when_started(marker: pathlib.Path, air_home: pathlib.Path, sent: dict, before: set[str]) -> None:
    """Press Stop (as the server route does) once the %%air_run cell is busy: on its run, the one not live
    ``before``."""
    deadline = time.monotonic() + 120
    while not marker.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    sent["accepted"] = request_stop(new_live_run(air_home, before))


@pytest.mark.usefixtures("no_orphans")
def test_saved_cards_are_static_readable_and_small(notebook_env, air_home, runs_of, artifact_text):
    # Given a notebook with a chatty 2-rank call that logs a metric, a failing call and a %%air_run cell
    marker = notebook_env / "busy"
    cells = ["%load_ext jupyter_air", CHATTY, BROKEN, air_run_until_stopped(marker)]
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(src) for src in cells])
    for failing in (2, 3):
        nb.cells[failing].metadata["tags"] = ["raises-exception"]
    client = NotebookClient(nb, timeout=180, kernel_name="python3", resources={"metadata": {"path": str(notebook_env)}})
    sent: dict = {}
    before = live_run_ids(air_home)
    stopper = threading.Thread(target=stop_when_started, args=(marker, air_home, sent, before))
    stopper.start()

    # When a real kernel executes it headless, the busy %%air_run cell being stopped
    client.execute()
    stopper.join()
    saved = nbformat.writes(nb)

    # Then each card was replaced by its final static snapshot: HTML and text, no widget view, no widget state
    for index in (1, 2, 3):
        (card,) = outputs_of(nb.cells[index], "display_data")
        assert set(card.data) == {"text/html", "text/plain"}, index
    assert WIDGET_VIEW_MIMETYPE not in saved
    widget_states = nb.metadata.get("widgets", {}).get("application/vnd.jupyter.widget-state+json", {})
    assert all(w["state"]["card"] == {} for w in widget_states.get("state", {}).values())
    # And the chatty call's card shows it finished, its metric, and each rank's last lines only
    (chatty,) = outputs_of(nb.cells[1], "display_data")
    html, text = chatty.data["text/html"], chatty.data["text/plain"]
    assert ">finished</span>" in html and "2 ranks on 1 node · CPU" in html
    assert "<td>train_loss</td><td>0.2</td><td>4</td>" in html and "<svg" in html
    assert f"[rank 1] line {LINES_PER_RANK - 1} of rank 1" in html and "[rank 0] line 0 of rank 0" not in html
    assert "9600 earlier line(s) only in the run&#x27;s logs/ artifacts" in html
    assert text.startswith("MLflow run 'chatty'") and "  train_loss = 0.2 (step 4)" in text
    assert not outputs_of(nb.cells[1], "stream")  # the ranks' lines are in the card, not printed
    # And the notebook file stays small although the ranks printed 10,000 lines, which the artifacts keep
    assert len(saved) < 80_000, len(saved)
    chatty_run = next(r for r in runs_of("card-notebook") if r.info.run_name == "chatty")
    assert len(artifact_text(chatty_run.info.run_id, "logs/node_0/rank_1.log").splitlines()) == LINES_PER_RANK

    # And the failed call's card is red with node, rank, exit code and cause, while the error still shows
    (broken,) = outputs_of(nb.cells[2], "display_data")
    assert "jp-Air-runCard-failed" in broken.data["text/html"]
    assert "Failed on node 0, rank 1, exit code 1: ValueError: rank one broke" in broken.data["text/html"]
    assert outputs_of(nb.cells[2], "error")[0].ename == "DistributedError"

    # And Stop ended the busy %%air_run cell with CallStopped (a RunStopped), its run KILLED, the cell's own
    # frames shown and not jupyter_air's
    assert sent["accepted"] is True
    (error,) = outputs_of(nb.cells[3], "error")
    assert (error.ename, error.evalue) == ("CallStopped", STOPPED)
    shown = "\n".join(error.traceback)
    assert f"RunStopped: {STOPPED}" in shown and "time.sleep(0.1)" in shown and "tracked.py" not in shown
    # (nor the line IPython wrote for the cell magic, the whole cell escaped, nor the `with` machinery's)
    assert "run_cell_magic" not in shown and "contextlib.py" not in shown, shown
    (stopped_card,) = outputs_of(nb.cells[3], "display_data")
    assert ">killed</span>" in stopped_card.data["text/html"] and "in this kernel" in stopped_card.data["text/html"]
    stopped = next(r for r in runs_of("card-notebook") if r.info.run_name == "stopped")
    assert (stopped.info.status, stopped.data.tags["air.error"]) == ("KILLED", STOPPED)
