"""The run card's metrics, read from a real MLflow store: most recent first, thinned history, one query a read."""

from __future__ import annotations

import io
from types import SimpleNamespace

from mlflow.entities import Metric

from jupyter_air.run_card.metrics import MAX_METRICS, MAX_POINTS, MetricReader
from jupyter_air.tracking.store import ensure_experiment, tracker

T0 = 1_764_000_000_000


def test_the_latest_metrics_come_first_with_a_thinned_history(store):
    # Given a run that logged 100 steps of train_loss, then 10 other metrics, and system metrics last
    run_id = store.create_run(ensure_experiment("card-metrics")).info.run_id
    store.log_batch(run_id, metrics=[Metric("train_loss", 1.0 / (s + 1), T0 + s, s) for s in range(100)])
    store.log_batch(run_id, metrics=[Metric(f"other_{i}", float(i), T0 + 200 + i, 0) for i in range(10)])
    store.log_batch(run_id, metrics=[Metric("system/cpu_utilization_percentage", 50.0, T0 + 900, 0)])
    reader = MetricReader(tracker(), run_id)

    # When the card reads them
    shown = reader.read()

    # Then it shows the 8 most recently logged (system metrics left out), newest first
    assert [m.key for m in shown] == [f"other_{i}" for i in range(9, 9 - MAX_METRICS, -1)]

    # When train_loss is logged again, most recently of all
    store.log_batch(run_id, metrics=[Metric("train_loss", 0.001, T0 + 1000, 100)])
    loss = reader.read()[0]

    # Then it comes first, with its latest value and step, and a sparkline of its history thinned to MAX_POINTS
    assert (loss.key, loss.value, loss.step) == ("train_loss", 0.001, 100)
    assert len(loss.points) == MAX_POINTS and loss.points[0] == 1.0 and loss.points[-1] == 0.001

    # And a read with nothing new adds no point, while a new value adds one and drops the oldest
    assert reader.read()[0].points == loss.points
    store.log_batch(run_id, metrics=[Metric("train_loss", 0.0005, T0 + 1001, 101)])
    again = reader.read()[0]
    assert len(again.points) == MAX_POINTS and again.points[-1] == 0.0005 and again.points[0] != 1.0


def test_a_run_that_ended_shows_its_gpu_energy_saying_when_it_was_simulated(store):
    from mlflow.entities import RunTag

    from jupyter_air.run_card.card import RunCard, header_for
    from jupyter_air.run_card.state import CardState

    # Given a run whose simulated GPUs used 0.86861 Wh, as its end logs it
    run_id = store.create_run(ensure_experiment("card-energy")).info.run_id
    store.log_batch(
        run_id,
        metrics=[Metric("system/total_energy_watt_hours", 0.86861, T0, 0)],
        tags=[RunTag("air.gpu_source", "simulated")],
    )
    run = SimpleNamespace(run_id=run_id, run_name="e", experiment_name="card-energy", url=None, experiment_url=None)
    header = header_for(run, kind="kernel", world_size=1, gpus=0)
    printed = io.StringIO()
    card = RunCard(CardState(header), MetricReader(tracker(), run_id), "text", stoppable=False, out=printed)

    # When its card ends
    card.finish("FINISHED", None)

    # Then the card says the energy, in units, and that the GPUs were simulated
    assert "  GPU energy 0.869 Wh (simulated GPUs)" in printed.getvalue().splitlines()
    assert card.snapshot()["energy"] == {"watt_hours": 0.86861, "simulated": True}
