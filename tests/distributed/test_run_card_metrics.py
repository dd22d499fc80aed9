"""The run card's metrics, read from a real MLflow store: most recent first, thinned history, one query a read."""

from __future__ import annotations

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
