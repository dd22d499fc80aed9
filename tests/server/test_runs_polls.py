"""The runs routes' polls kept while the store is unchanged, against a real Jupyter server and a real SQLite MLflow
store: a poll that finds nothing new searches nothing, every change shows on the next poll, identical polls at
once share one search; the timeline's window holds this node's runs of jupyter_air (an `air` job's among them),
and each node's timeline is answered apart."""

from __future__ import annotations

import asyncio
import os
import threading
import time
import uuid

import pytest
import test_runs_api
from workloads.workload_helpers import Air, write_workload

from jupyter_air.tracking.naming import NODE_TAG, node_name

# The runs routes' fixtures: a module's own store, its MLflow client, the notebook polled, the GET.
air_home, mlflow_client = test_runs_api.air_home, test_runs_api.mlflow_client
notebook, runs = test_runs_api.notebook, test_runs_api.runs


@pytest.fixture
def searches(monkeypatch):
    """Counts the server's searches of the store (runs and experiments), by patching MLflow's client."""
    from mlflow.tracking import MlflowClient

    counts = {"runs": 0, "experiments": 0}
    for kind, name in (("runs", "search_runs"), ("experiments", "search_experiments")):
        original = getattr(MlflowClient, name)

        def counted(self, *args, _kind=kind, _original=original, **kwargs):
            counts[_kind] += 1
            return _original(self, *args, **kwargs)

        monkeypatch.setattr(MlflowClient, name, counted)
    return counts


async def test_a_poll_with_nothing_new_searches_nothing_and_every_change_shows_on_the_next(
    runs, notebook, mlflow_client, searches
):
    # Given a notebook with a running run, polled once by the panel (since the run started)
    experiment_id = mlflow_client.create_experiment(f"changes-{uuid.uuid4().hex}")
    tags = {"air.notebook_path": os.environ["JPY_SESSION_NAME"], "air.source": "distributed"}
    start = int(time.time() * 1000)
    running = mlflow_client.create_run(experiment_id, start_time=start, tags=tags).info.run_id
    first = await runs(notebook=notebook, since=start, limit=200)
    assert [(r["run_id"], r["status"]) for r in first["runs"]] == [(running, "RUNNING")]

    # When it polls again and nothing was written to the store
    searched = dict(searches)
    again = await runs(notebook=notebook, since=start, limit=200)
    # Then it gets the same answer without searching the store
    assert again == first and searches == searched

    # When the run logs a metric, Then the next poll shows it
    mlflow_client.log_metric(running, "train_loss", 0.5)
    assert (await runs(notebook=notebook, since=start, limit=200))["runs"][0]["metrics"] == {"train_loss": 0.5}
    # When it ends, Then the next poll shows it ended
    mlflow_client.set_terminated(running, end_time=start + 1)
    assert (await runs(notebook=notebook, since=start, limit=200))["runs"][0]["status"] == "FINISHED"
    # When the notebook starts a run in a brand-new experiment, Then the next poll shows it at once
    newer = mlflow_client.create_experiment(f"changes-new-{uuid.uuid4().hex}")
    new_run = mlflow_client.create_run(newer, start_time=start + 2, tags=tags).info.run_id
    listed = await runs(notebook=notebook, since=start, limit=200)
    assert [r["run_id"] for r in listed["runs"]] == [new_run, running]
    mlflow_client.set_terminated(new_run, end_time=start + 3)  # the module's other tests share the store


async def test_identical_concurrent_polls_share_one_search(runs, notebook, mlflow_client, searches, monkeypatch):
    from mlflow.tracking import MlflowClient

    from jupyter_air.tracking.runs_query import RunsQuery

    # Given a notebook's run, and a server whose searches wait until every poll below has reached it
    experiment_id = mlflow_client.create_experiment(f"shared-{uuid.uuid4().hex}")
    tags = {"air.notebook_path": os.environ["JPY_SESSION_NAME"], "air.source": "magic"}
    start = int(time.time() * 1000)
    run_id = mlflow_client.create_run(experiment_id, start_time=start, tags=tags).info.run_id
    mlflow_client.set_terminated(run_id, end_time=start + 1)
    before = dict(searches)
    one = await runs(notebook=notebook, since=start - 1, limit=200)
    per_poll = searches["runs"] - before["runs"]
    polls, arrived, everyone_in = 5, [], threading.Event()
    notebook_query, search = RunsQuery.notebook, MlflowClient.search_runs

    def arriving(self, *args, **kwargs):
        if kwargs.get("wait", True):  # a poll that may search (not the look for a kept answer that comes first)
            arrived.append(1)
            if len(arrived) == polls:
                everyone_in.set()
        return notebook_query(self, *args, **kwargs)

    def held(self, *args, **kwargs):
        everyone_in.wait(30)
        return search(self, *args, **kwargs)

    monkeypatch.setattr(RunsQuery, "notebook", arriving)
    monkeypatch.setattr(MlflowClient, "search_runs", held)
    counted = searches["runs"]

    # When 5 panels poll the same query at once
    answers = await asyncio.gather(*(runs(notebook=notebook, since=start, limit=200) for _ in range(polls)))

    # Then they all get the same answer, made by as many searches as one poll makes
    assert [r["run_id"] for r in answers[0]["runs"]] == [r["run_id"] for r in one["runs"]] == [run_id]
    assert all(answer == answers[0] for answer in answers) and len(arrived) == polls
    assert searches["runs"] - counted == per_poll


async def test_an_unchanged_poll_is_answered_on_the_event_loop_by_the_servers_one_query(
    runs, notebook, mlflow_client, searches, monkeypatch
):
    from jupyter_air.server import panel_handlers
    from jupyter_air.tracking.runs_query import RunsQuery

    # Given a notebook's run, polled once by the panel
    experiment_id = mlflow_client.create_experiment(f"unchanged-{uuid.uuid4().hex}")
    tags = {"air.notebook_path": os.environ["JPY_SESSION_NAME"], "air.source": "magic"}
    start = int(time.time() * 1000)
    run_id = mlflow_client.create_run(experiment_id, start_time=start, tags=tags).info.run_id
    mlflow_client.set_terminated(run_id, end_time=start + 1)
    first = await runs(notebook=notebook, since=start, limit=200)
    made, sent = [], []
    query_init, call_model = RunsQuery.__init__, panel_handlers.call_model
    monkeypatch.setattr(RunsQuery, "__init__", lambda self, *a: made.append(1) or query_init(self, *a))
    monkeypatch.setattr(panel_handlers, "call_model", lambda *a: sent.append(1) or call_model(*a))
    searched = dict(searches)

    # When it polls 3 times more and nothing was written to the store
    answers = [await runs(notebook=notebook, since=start, limit=200) for _ in range(3)]

    # Then each gets the first answer, kept by the server's one query: no search, no query object made for the
    # request, nothing sent off the event loop
    assert answers == [first] * 3 and [r["run_id"] for r in first["runs"]] == [run_id]
    assert searches == searched and made == [] and sent == []


async def test_the_timeline_of_another_node_gets_that_nodes_runs_not_this_nodes_kept_answer(runs, mlflow_client):
    # Given runs of notebook calls in a window long past: on this node, on node gpu-b, and one recorded before runs
    # named their node
    experiment_id = mlflow_client.create_experiment(f"nodes-{uuid.uuid4().hex}")
    start = 1_600_000_000_000

    def run(node: str | None) -> str:
        tags = {"air.source": "distributed", **({NODE_TAG: node} if node else {})}
        made = mlflow_client.create_run(experiment_id, start_time=start, tags=tags)
        mlflow_client.set_terminated(made.info.run_id, end_time=start + 1000)
        return made.info.run_id

    here, there, untagged = run(node_name()), run("gpu-b"), run(None)
    window = {"from": start, "to": start + 2000}

    # When the GPU panel's timeline asks for this node's window (kept by the server), then for node gpu-b's
    local = await runs(**window)
    remote = await runs(**window, node="gpu-b")

    # Then each gets its node's runs alone (those recorded before runs named their node are this node's)
    assert {r["run_id"] for r in local["runs"]} == {here, untagged} and local["node"] == node_name()
    assert [r["run_id"] for r in remote["runs"]] == [there] and remote["node"] == "gpu-b"
    # and naming this node is asking without a node
    assert await runs(**window, node=node_name()) == local


@pytest.fixture
def own_home(air_home, tmp_path, monkeypatch):
    """An AIR_HOME and embedded store of the test's own (the module's store holds other tests' runs); the server,
    started on the module's, exported that one's URI: it follows this one's too."""
    monkeypatch.setenv("AIR_HOME", str(tmp_path / "air"))
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{tmp_path / 'air' / 'mlflow.db'}")
    return tmp_path / "air"


async def test_the_timeline_gets_this_nodes_runs_active_in_the_window(runs, own_home, tmp_path):
    from jupyter_air.tracking.store import client

    # Given an `air` job that ran, runs of notebook calls inside, before and after a window, one still
    # running, one from another node and a plain MLflow run that jupyter_air did not make
    air = Air(own_home, f"sqlite:///{own_home / 'mlflow.db'}")
    mlflow_client = client()
    job = air.wait(air.submit(write_workload(tmp_path, experiment_name="timeline-jobs", command="echo hi")))
    job_run = job["attempts"][0]["mlflow_run_id"]
    info = mlflow_client.get_run(job_run).info
    experiment_id = mlflow_client.create_experiment(f"timeline-{uuid.uuid4().hex}")
    start, end = info.start_time - 1000, info.end_time + 1000

    def run(begin, finish, **tags):
        made = mlflow_client.create_run(experiment_id, start_time=begin, tags={"air.source": "distributed", **tags})
        if finish is not None:
            mlflow_client.set_terminated(made.info.run_id, end_time=finish)
        return made.info.run_id

    inside = run(start + 100, end - 100, **{NODE_TAG: node_name()})
    straddling = run(start - 5000, start + 10)
    running = run(start - 5000, None)
    run(start - 9000, start - 8000)  # before
    run(end + 10, end + 20)  # after
    run(start + 100, end - 100, **{NODE_TAG: "another-node"})
    plain = mlflow_client.create_run(experiment_id, start_time=start + 100)
    mlflow_client.set_terminated(plain.info.run_id, end_time=end - 100)

    # When the GPU panel asks for the runs of its charts' window
    answer = await runs(**{"from": start, "to": end})

    # Then it gets exactly the runs of jupyter_air on this node active in the window, the job's among them
    found = {r["run_id"]: r for r in answer["runs"]}
    assert set(found) == {job_run, inside, straddling, running}
    assert found[job_run]["source"] == "job" and found[job_run]["job_run_id"] == job["job_run_id"]
    assert found[job_run]["attempt"] == 0 and found[running]["end_ms"] is None
    assert answer["node"] == node_name() and answer["truncated"] is False
