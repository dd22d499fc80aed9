"""The Stop request of a run card: a busy `.distributed()` call stops every rank and its run ends KILLED."""

from __future__ import annotations

import os
import pathlib
import threading
import time

import pytest
from live_runs import live_run_ids, new_live_run

from jupyter_air import distributed
from jupyter_air.tracking.lifecycle import RunStopped
from jupyter_air.tracking.stops import request_stop
from jupyter_air.training.errors import CallStopped
from jupyter_air.training.tracked import STOPPED

pytestmark = pytest.mark.usefixtures("no_orphans")


def train_forever(folder):
    """Log a metric on rank 0 and never return, like a training loop someone wants to stop."""
    import mlflow

    rank = os.environ["RANK"]
    if rank == "0":
        mlflow.start_run(run_id=os.environ["MLFLOW_RUN_ID"])
    step = 0
    while True:
        step += 1
        if rank == "0":
            mlflow.log_metric("train_loss", 1.0 / step, step=step)
        pathlib.Path(folder, f"rank{rank}").touch()  # running, and on rank 0 a metric logged that the stop keeps
        time.sleep(0.1)


def stop_once_ranks_run(folder: pathlib.Path, air_home: pathlib.Path, sent: dict, before: set[str]) -> None:
    """As the Stop route does: once both ranks run, ask the call's live run (not one live ``before``) to stop."""
    deadline = time.monotonic() + 120
    while not all((folder / f"rank{r}").exists() for r in (0, 1)) and time.monotonic() < deadline:
        time.sleep(0.1)
    run_id = new_live_run(air_home, before)
    sent["run_id"], sent["accepted"] = run_id, request_stop(run_id)


def test_a_stop_request_stops_every_rank_and_kills_the_run(store, runs_of, air_home, tmp_path):
    # Given a 2-rank call that trains until stopped, and a Stop request sent once its ranks run
    call = distributed(train_forever, gpus=2, experiment="stop-requests")
    sent: dict = {}
    before = live_run_ids(air_home)
    stopper = threading.Thread(target=stop_once_ranks_run, args=(tmp_path, air_home, sent, before))
    stopper.start()

    # When the call runs, Then it raises CallStopped (a RunStopped), saying every process was stopped
    with pytest.raises(RunStopped, match=STOPPED) as stopped:
        call.distributed(str(tmp_path))
    stopper.join()
    assert isinstance(stopped.value, CallStopped)

    # And the request was accepted, the run ended KILLED with the reason, and its metric was kept
    assert sent["accepted"] is True
    (run,) = runs_of("stop-requests")
    assert run.info.run_id == sent["run_id"]
    assert (run.info.status, run.data.tags["air.error"]) == ("KILLED", STOPPED)
    assert run.data.metrics["train_loss"] > 0
    # And the run no longer takes Stop requests (no process of it is left: checked by no_orphans)
    assert live_run_ids(air_home) <= before and request_stop(sent["run_id"]) is False
