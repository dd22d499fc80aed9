"""A node of a multi-node run samples its system metrics into the run's store; the driver's ask to start is answered
before that store opens, which on a busy node can take longer than the driver waits for an answer."""

from __future__ import annotations

import logging
import sqlite3
import threading

from jupyter_air.tracking.node_metrics import NodeMetrics
from jupyter_air.tracking.system_metrics import SystemMetrics


class Node(NodeMetrics):
    index = 1


def test_a_node_answers_while_the_runs_store_is_locked_and_samples_once_it_opens(store, tmp_path):
    # Given a run in a SQLite store that another connection holds locked, as a writer does while it commits
    from mlflow import MlflowClient

    path = tmp_path / "runs.db"
    uri = f"sqlite:///{path}"
    client = MlflowClient(uri)
    run_id = client.create_run(client.create_experiment("node-metrics")).info.run_id
    writer = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    writer.execute("BEGIN EXCLUSIVE")
    node = Node()

    # When the driver asks the node to sample into it: the answer comes while the store is still locked
    node.sample_metrics(run_id, uri, 0.2, None)
    (logged,) = writer.execute("SELECT count(*) FROM metrics WHERE run_uuid = ?", (run_id,)).fetchone()

    # and the call ends, asking the node to stop sampling, before the writer lets go of the store a second later
    def let_go():
        writer.execute("COMMIT")
        writer.close()

    threading.Timer(1.0, let_go).start()
    node.stop_metrics()

    # Then nothing was logged before the store opened, and the stop waited for it: the node's samples are in the run
    assert logged == 0
    metrics = client.get_run(run_id).data.metrics
    assert "system/node_1/cpu_utilization_percentage" in metrics
    assert "system/node_1/system_memory_usage_megabytes" in metrics


def test_a_node_whose_store_cannot_open_says_so_in_its_log_and_stops_cleanly(store, tmp_path, caplog):
    # Given a tracking URI whose SQLite file is damaged
    path = tmp_path / "damaged.db"
    path.write_bytes(b"not a database" * 100)

    # When a node samples into a run there and is stopped
    with caplog.at_level(logging.WARNING, logger="jupyter_air.tracking.node_metrics"):
        node = Node()
        node.sample_metrics("0" * 32, f"sqlite:///{path}", 0.2, None)
        node.stop_metrics()

    # Then its log names the node, the run and the cause, and the node is ready for the next run
    (record,) = [r for r in caplog.records if r.name == "jupyter_air.tracking.node_metrics"]
    assert f"System metrics of node_1 not sampled into run {'0' * 32}" in record.getMessage()
    assert f"{path} is damaged (file is not a database)" in record.getMessage()
    node.stop_metrics()


def test_a_sampler_stopped_while_it_still_opened_the_store_never_samples(store):
    # Given a sampler a node stopped waiting for (its store took too long to open)
    run_id = store.create_run(store.create_experiment("node-metrics-late")).info.run_id
    metrics = SystemMetrics(run_id, interval_seconds=0.2, node_id="node_1")
    metrics.stop()

    # When it gets the store after all
    metrics.start()

    # Then its sampling thread ends at once and logs nothing
    threads = [t for t in threading.enumerate() if t.name == f"air-system-metrics-{run_id}"]
    for thread in threads:
        thread.join(10)
    assert not any(thread.is_alive() for thread in threads)
    assert store.get_run(run_id).data.metrics == {}
