"""The runs routes of the Experiment panel and the GPU timeline, against a real Jupyter server and a real
SQLite MLflow store holding runs made by each source's own code (notebook calls, ``%%air_run``, ``air`` jobs). The
timeline's window and its polls: test_runs_polls."""

from __future__ import annotations

import json
import os
import time
import uuid

import pytest
from tornado.httpclient import HTTPClientError

from jupyter_air.tracking.naming import node_name

USER = "alice"


@pytest.fixture(scope="module")
def air_home(tmp_path_factory):
    """AIR_HOME with the embedded store (its tables created once for the module: migrations take seconds)."""
    home = tmp_path_factory.mktemp("air")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("AIR_HOME", str(home))
        patch.setenv("JUPYTERHUB_USER", USER)
        for name in ("MLFLOW_TRACKING_URI", "MLFLOW_EXPERIMENT_NAME", "MLFLOW_EXPERIMENT_ID", "MLFLOW_RUN_ID"):
            patch.delenv(name, raising=False)
        from jupyter_air.tracking.store import client

        client().search_experiments()
        yield home


@pytest.fixture
def mlflow_client(air_home):
    from jupyter_air.tracking.store import client

    return client()


@pytest.fixture
def notebook(jp_root_dir, monkeypatch):
    """A notebook with a hostile name in a folder of the server's root; its kernel's JPY_SESSION_NAME."""
    name = f'<img src=x onerror=alert(1)> it\'s "{uuid.uuid4().hex[:6]}" 100%_.ipynb'
    (jp_root_dir / "work").mkdir(exist_ok=True)
    (jp_root_dir / "work" / name).write_text("{}")
    monkeypatch.setenv("JPY_SESSION_NAME", str(jp_root_dir / "work" / name))  # what Jupyter gives its kernels
    return f"work/{name}"


@pytest.fixture
def runs(jp_fetch):
    async def fetch(**params):
        response = await jp_fetch("jupyter-air", "runs", params={k: str(v) for k, v in params.items()})
        return json.loads(response.body)

    return fetch


@pytest.fixture
def refused(jp_fetch):
    async def fetch(*parts, method="GET", **params):
        with pytest.raises(HTTPClientError) as error:
            body = b"" if method == "POST" else None
            await jp_fetch("jupyter-air", *parts, method=method, body=body, params=params)
        return error.value.code, json.loads(error.value.response.body)["message"]

    return fetch


def distributed_call(run_name: str, experiment: str | None = None, metrics: dict | None = None):
    """A run created like ``.distributed()`` creates it (the same function and tags), ended FINISHED."""
    from jupyter_air.tracking.store import client
    from jupyter_air.training import runs

    tags = {"air.source": "distributed", "air.function": "train", "air.gpus": "2", "air.world_size": "2"}
    run = runs.create_run(experiment=experiment, run_name=run_name, tags=tags)
    with run:
        run.log_params({"lr": 0.1, "epochs": 3})
        ranks = client()  # what the ranks log with: MLflow's client
        for step, value in enumerate((0.9, 0.5, 0.25)):
            ranks.log_metric(run.run_id, "train_loss", value, step=step)
        for key, value in (metrics or {}).items():
            ranks.log_metric(run.run_id, key, value)
    return run.run_id


def air_run_cell(run_name: str):
    """A run made by ``%%air_run``'s own code path, with a nested ``.distributed()``-style child inside it."""
    import mlflow

    from jupyter_air.training.tracked import active_in_kernel, tracked_run

    tags = {"air.source": "magic", "air.function": "air_run cell", "air.gpus": "0", "air.world_size": "1"}
    with (
        tracked_run(experiment=None, run_name=run_name, tags=tags, params={}, log_system_metrics=False) as run,
        active_in_kernel(run.run.run_id),
    ):
        mlflow.log_metric("accuracy", 0.75)
        time.sleep(0.01)
        child = distributed_call(f"{run_name}-child")
    return run.run.run_id, child


async def test_a_notebooks_runs_newest_first_with_what_the_panel_shows(
    runs, notebook, mlflow_client, jp_base_url, monkeypatch
):
    # Given a notebook (hostile name) that made a distributed call, then a %%air_run cell with a nested call,
    # a run in its default experiment made without the notebook tag, and a call from another notebook
    many = {f"m{i:02d}": float(i) for i in range(10)}
    first = distributed_call("first <b>call</b>", experiment="shared-experiment", metrics=many)
    time.sleep(0.01)
    parent, child = air_run_cell("cell run")
    time.sleep(0.01)
    default_name = f"/Users/{USER}/{notebook.rsplit('/', 1)[1].removesuffix('.ipynb')}"
    default_id = mlflow_client.get_experiment_by_name(default_name).experiment_id
    untagged = mlflow_client.create_run(default_id, run_name="logged by hand").info.run_id
    for other in ("/elsewhere/other.ipynb", os.environ["JPY_SESSION_NAME"].replace("/work/", "/otherwork/")):
        monkeypatch.setenv("JPY_SESSION_NAME", other)
        distributed_call("another notebook", experiment="shared-experiment")

    # When the panel asks for the notebook's runs
    answer = await runs(notebook=notebook)

    # Then it gets exactly this notebook's runs and its default experiment's, newest first
    listed = {r["run_id"]: r for r in answer["runs"]}
    assert [r["run_id"] for r in answer["runs"]] == [untagged, child, parent, first]
    assert answer["next_page_token"] is None and answer["default_experiment"] == default_name
    assert answer["ui_url"] == f"{jp_base_url}mlflow/"
    # And each run says what the panel shows: status, source, sizes, last metrics, parent, link
    call = listed[first]
    assert call["run_name"] == "first <b>call</b>" and call["experiment_name"] == "shared-experiment"
    assert call["status"] == "FINISHED" and call["end_ms"] >= call["start_ms"] > 0
    assert (call["source"], call["world_size"], call["gpus"], call["nodes"]) == ("distributed", 2, 2, [node_name()])
    assert call["metrics"] == {f"m{i:02d}": float(i) for i in range(8)}  # the first 8 by name, latest values
    assert call["metrics_count"] == 11 and call["params_count"] == 2
    assert call["url"] == f"{jp_base_url}jupyter-air/runs/{first}/open"
    assert listed[parent]["source"] == "magic" and listed[parent]["metrics"] == {"accuracy": 0.75}
    assert listed[child]["parent_run_id"] == parent and listed[child]["metrics"] == {"train_loss": 0.25}
    assert listed[untagged]["source"] is None and listed[untagged]["experiment_name"] == default_name


async def test_runs_are_paged_without_gaps_or_repeats(runs, notebook, mlflow_client):
    # Given 23 runs of a notebook, up to 11 started in the same millisecond, some tagged with the notebook in
    # an experiment of their own and some in its default experiment
    tagged_id = mlflow_client.create_experiment(f"paging-{uuid.uuid4().hex}")
    default_name = f"/Users/{USER}/{notebook.rsplit('/', 1)[1].removesuffix('.ipynb')}"
    default_id = mlflow_client.create_experiment(default_name)
    start = int(time.time() * 1000) - 100_000
    made = []
    for i in range(23):
        tags = {"air.notebook_path": os.environ["JPY_SESSION_NAME"], "air.source": "distributed"}
        experiment_id = tagged_id if i % 3 else default_id
        run = mlflow_client.create_run(experiment_id, start_time=start + (i // 11) * 1000, tags=tags)
        mlflow_client.set_terminated(run.info.run_id, end_time=start + 50_000)
        made.append(run.info.run_id)

    # When the panel reads them 5 at a time, following next_page_token
    seen, pages = await all_pages(runs, notebook, 5)

    # Then every run comes exactly once, newest first, in 5 pages
    assert sorted(r["run_id"] for r in seen) == sorted(made)
    assert [r["start_ms"] for r in seen] == sorted((r["start_ms"] for r in seen), reverse=True)
    assert pages == 5


async def test_a_full_first_page_is_followed_by_the_rest(runs, notebook, mlflow_client):
    # Given a notebook with exactly two pages of runs
    experiment_id = mlflow_client.create_experiment(f"two-pages-{uuid.uuid4().hex}")
    tags = {"air.notebook_path": os.environ["JPY_SESSION_NAME"], "air.source": "magic"}
    made = {mlflow_client.create_run(experiment_id, tags=tags).info.run_id for _ in range(6)}
    # When the panel reads them 3 at a time
    seen, _ = await all_pages(runs, notebook, 3)
    # Then the first page is not taken for the last one
    assert {r["run_id"] for r in seen} == made and len(seen) == 6


async def all_pages(runs, notebook: str, limit: int) -> tuple[list[dict], int]:
    """Every run of the notebook read ``limit`` at a time, and the number of pages (at most 20)."""
    seen, token = [], None
    for pages in range(1, 21):
        answer = await runs(notebook=notebook, limit=limit, **({"page_token": token} if token else {}))
        seen += answer["runs"]
        token = answer["next_page_token"]
        if token is None:
            return seen, pages
    raise AssertionError(f"still paging after 20 pages: {len(seen)} runs seen")


async def test_since_gives_the_runs_started_at_or_after_it(runs, notebook, mlflow_client):
    # Given a run that started long ago, and two that started recently, one of them still running
    experiment_id = mlflow_client.create_experiment(f"since-{uuid.uuid4().hex}")
    tags = {"air.notebook_path": os.environ["JPY_SESSION_NAME"], "air.source": "magic"}
    now = int(time.time() * 1000)
    old = mlflow_client.create_run(experiment_id, start_time=now - 60_000, tags=tags)
    recent = mlflow_client.create_run(experiment_id, start_time=now - 5_000, tags=tags)
    running = mlflow_client.create_run(experiment_id, start_time=now - 4_000, tags=tags)
    mlflow_client.set_terminated(old.info.run_id, end_time=now - 50_000)
    mlflow_client.set_terminated(recent.info.run_id, end_time=now - 1_000)
    # And, started since too, more runs of another notebook than a poll asks for
    others = {**tags, "air.notebook_path": "/elsewhere/other.ipynb"}
    for offset in range(3000, 0, -1000):
        run = mlflow_client.create_run(experiment_id, start_time=now - offset + 500, tags=others)
        mlflow_client.set_terminated(run.info.run_id, end_time=now)

    # When the panel asks for what started since 10 s ago, 3 runs at most
    try:
        answer = await runs(notebook=notebook, since=now - 10_000, limit=3)
    finally:
        mlflow_client.set_terminated(running.info.run_id, end_time=now)  # the module's other tests share the store

    # Then it gets the recent and the running one, not the old one nor the other notebook's
    assert [r["run_id"] for r in answer["runs"]] == [running.info.run_id, recent.info.run_id]
    assert [r["status"] for r in answer["runs"]] == ["RUNNING", "FINISHED"]


async def test_no_store_yet_means_no_runs_and_nothing_created(jp_fetch, tmp_path, monkeypatch):
    # Given a server whose AIR_HOME has no tracking store yet
    monkeypatch.setenv("AIR_HOME", str(tmp_path / "empty-home"))
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    # When the panel asks for a notebook's runs and for a window
    notebook = json.loads((await jp_fetch("jupyter-air", "runs", params={"notebook": "a.ipynb"})).body)
    window = json.loads((await jp_fetch("jupyter-air", "runs", params={"from": "0", "to": "1"})).body)
    # Then both are empty and no store was created
    assert notebook["runs"] == window["runs"] == []
    assert not (tmp_path / "empty-home" / "mlflow.db").exists()


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        ({}, "Pass notebook="),
        ({"notebook": "a.ipynb", "from": "1", "to": "2"}, "not both"),
        ({"from": "1"}, "Pass notebook="),
        ({"from": "5", "to": "2"}, "from=5 is after to=2"),
        ({"notebook": "a.ipynb", "limit": "0"}, "'limit' must be an integer from 1 to 1000"),
        ({"notebook": "a.ipynb", "limit": "ten"}, "'limit' must be an integer"),
        ({"notebook": "a.ipynb", "since": "-1"}, "'since' must be a non-negative integer"),
        ({"notebook": "a.ipynb", "since": str(2**64)}, "'since' must be a non-negative integer"),
        ({"from": "0", "to": str(2**63)}, "'to' must be a non-negative integer epoch time in milliseconds, at most"),
        ({"from": "9" * 30, "to": "9" * 31}, "'from' must be a non-negative integer"),
        ({"notebook": "a.ipynb", "page_token": "not-a-token"}, "page_token 'not-a-token' is not one this server"),
    ],
)
async def test_bad_queries_are_refused_with_how_to_fix_them(refused, air_home, params, expected):
    # Given a server with a store, When the runs route is asked something it cannot answer
    code, message = await refused("runs", **params)
    # Then it answers 400 saying what is wrong
    assert code == 400 and expected in message
