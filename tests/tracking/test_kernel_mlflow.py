"""One MLflow in the notebook: real kernels started by a real Jupyter server with jupyter_air (``MLFLOW_TRACKING_URI``
unset, a store that already holds other experiments) use MLflow as MLflow's docs say, and calls, the Experiment
panel and the embedded store see the same runs."""

from __future__ import annotations

import json
import os
import pathlib
import time
import uuid

import pytest
from tornado.httpclient import HTTPClientError

from jupyter_air.tracking.store import client, ensure_experiment

REPO_ROOT = pathlib.Path(__file__).resolve().parents[2]
NOTEBOOK = "work/train.ipynb"
TRAIN = (
    "from jupyter_air import distributed\n"
    "@distributed(gpus=2)\n"
    "def train(lr=0.1):\n"
    "    import os\n"
    "    return int(os.environ['RANK'])\n"
)

pytestmark = pytest.mark.usefixtures("no_orphans")


@pytest.fixture
def kernel_environment(air_home, monkeypatch, tmp_path):
    """What a Jupyter server started without MLflow settings has: AIR_HOME only (this checkout importable)."""
    monkeypatch.setenv("AIR_HOME", str(air_home))
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(tmp_path / "runtime"))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(REPO_ROOT), os.environ.get("PYTHONPATH")])))
    for name in ("MLFLOW_TRACKING_URI", "MLFLOW_RUN_ID", "MLFLOW_EXPERIMENT_NAME", "MLFLOW_EXPERIMENT_ID"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv("JPY_SESSION_NAME", raising=False)
    for filler in range(3):  # experiments with the low ids a new store beside the notebook would hand out
        ensure_experiment(f"filler-{filler}")


@pytest.fixture
def jp_server_config(jp_server_config, kernel_environment):
    return jp_server_config


@pytest.fixture
def kernel(jp_fetch, jp_serverapp, jp_root_dir, jp_asyncio_loop):
    """Run cells in a kernel the server starts for ``work/train.ipynb``: each returns (output, error, seconds)."""
    (jp_root_dir / "work").mkdir(exist_ok=True)
    clients = []

    async def run(code: str) -> tuple[str, str, float]:
        if not clients:
            body = json.dumps(
                {"path": NOTEBOOK, "type": "notebook", "name": "train.ipynb", "kernel": {"name": "python3"}}
            )
            session = json.loads((await jp_fetch("api", "sessions", method="POST", body=body)).body)
            started = jp_serverapp.kernel_manager.get_kernel(session["kernel"]["id"]).client()
            started.start_channels()
            await started.wait_for_ready(timeout=120)
            clients.append((started, session["id"]))
        out, error = [], []

        def hook(msg):
            content = msg["content"]
            if msg["msg_type"] == "stream":
                out.append(content["text"])
            elif msg["msg_type"] == "error":
                error.append("\n".join(content["traceback"]))

        begun = time.monotonic()
        await clients[0][0].execute_interactive(code, timeout=120, output_hook=hook)
        return "".join(out), "".join(error), time.monotonic() - begun

    yield run
    for started, session_id in clients:  # the kernel and its fork server end before the orphan check
        started.stop_channels()
        jp_asyncio_loop.run_until_complete(jp_fetch("api", "sessions", session_id, method="DELETE"))


@pytest.fixture
def store_uri(air_home) -> str:
    return f"sqlite:///{air_home / 'mlflow.db'}"


def _runs(experiment: str):
    found = client().get_experiment_by_name(experiment)
    assert found is not None, f"no experiment {experiment!r} in AIR_HOME's store"
    return client().search_runs([found.experiment_id], order_by=["attributes.start_time ASC"])


def _nothing_beside_the_notebook(root: pathlib.Path) -> None:
    assert sorted(p.name for p in (root / "work").iterdir()) == [], "MLflow wrote beside the notebook"


async def test_set_experiment_before_a_call_picks_its_experiment(kernel, jp_root_dir, store_uri):
    # Given a notebook that chooses its experiment with plain MLflow, as MLflow's docs say
    name = f"seed-{uuid.uuid4().hex[:6]}"
    out, error, _ = await kernel(f"import mlflow\nmlflow.set_experiment({name!r})\nprint(mlflow.get_tracking_uri())")
    assert not error

    # When a decorated function and a %%air_distributed cell run
    _, error, _ = await kernel(TRAIN + "ranks = train.distributed()")
    assert not error
    _, error, _ = await kernel("%load_ext jupyter_air")
    _, error, _ = await kernel("%%air_distributed --gpus 2\nx = 1")
    assert not error

    # Then the kernel's MLflow tracks into AIR_HOME's store, and both calls are runs of that experiment
    assert out.strip().splitlines()[-1] == store_uri
    assert [r.data.tags["air.source"] for r in _runs(name)] == ["distributed", "distributed"]
    # And MLFLOW_EXPERIMENT_NAME picks the experiment of a call made without set_experiment
    other = f"env-{uuid.uuid4().hex[:6]}"
    code = "import os\nmlflow.tracking.fluent._active_experiment_id = None\nos.environ.pop('MLFLOW_EXPERIMENT_ID')\n"
    code += f"os.environ['MLFLOW_EXPERIMENT_NAME'] = {other!r}\nranks = train.distributed()"
    _, error, _ = await kernel(code)
    assert not error and len(_runs(other)) == 1
    # And nothing (no mlflow.db, no mlruns) was created beside the notebook
    _nothing_beside_the_notebook(jp_root_dir)


async def test_a_call_inside_start_run_is_its_child_and_mlflow_run_id_resumes(kernel):
    # Given a notebook run started with plain MLflow
    name = f"nested-{uuid.uuid4().hex[:6]}"
    code = f"import mlflow\nmlflow.set_experiment({name!r})\n" + TRAIN
    code += "with mlflow.start_run(run_name='outer') as outer:\n    ranks = train.distributed()\n"
    # When a call runs inside it, and another one with MLFLOW_RUN_ID naming the outer run
    code += "import os\nos.environ['MLFLOW_RUN_ID'] = outer.info.run_id\nranks = train.distributed()\n"
    code += "os.environ.pop('MLFLOW_RUN_ID', None)"
    _, error, _ = await kernel(code)
    assert not error

    # Then the first call's run is the outer run's child, in its experiment; the second resumed the outer run
    outer, child = _runs(name)
    assert outer.info.run_name == "outer" and child.data.tags["mlflow.parentRunId"] == outer.info.run_id
    assert outer.data.tags["air.source"] == "distributed" and outer.info.status == "FINISHED"


async def test_a_failed_resume_is_one_line_naming_the_run_and_the_store(kernel, store_uri):
    # Given MLFLOW_RUN_ID naming a run this store does not have
    missing = uuid.uuid4().hex
    _, error, _ = await kernel(TRAIN + f"import os\nos.environ['MLFLOW_RUN_ID'] = {missing!r}")
    assert not error

    # When a call runs
    _, error, seconds = await kernel("train.distributed()")

    # Then it fails at once, in one line that names the run and the store, without jupyter_air's frames
    (line,) = [line for line in error.splitlines() if missing in line]
    assert line.startswith("KernelTrackingError: MLFLOW_RUN_ID=" + missing) and store_uri in line
    assert "jupyter_air/" not in error
    # (not after MLflow's retries, whose backoff alone takes 30 s: a bound no load on the machine comes near)
    assert seconds < 30, f"the failed resume took {seconds:.1f} s"


async def test_plain_mlflow_and_autolog_runs_are_the_notebooks_runs_in_the_panel(kernel, jp_fetch, jp_root_dir):
    # Given a notebook that logs with plain MLflow and with scikit-learn autologging, beside a call
    name = f"plain-{uuid.uuid4().hex[:6]}"
    code = f"import mlflow\nmlflow.set_experiment({name!r})\n"
    code += "with mlflow.start_run(run_name='by-hand'):\n    mlflow.log_metric('loss_ratio', 0.5)\n"
    code += "mlflow.sklearn.autolog(log_models=False)\nfrom sklearn.linear_model import LogisticRegression\n"
    code += (
        "LogisticRegression().fit([[0.0], [1.0], [2.0], [3.0]], [0, 0, 1, 1])\nmlflow.sklearn.autolog(disable=True)\n"
    )
    code += TRAIN + "ranks = train.distributed()"
    _, error, _ = await kernel(code)
    assert not error

    # When the Experiment panel asks for the notebook's runs
    response = await jp_fetch("jupyter-air", "runs", params={"notebook": NOTEBOOK})
    listed = {r["run_id"]: r for r in json.loads(response.body)["runs"] if r["experiment_name"] == name}

    # Then the hand-made run, the autologged one and the call are all there, each with its embedded UI link
    runs = _runs(name)
    assert len(runs) == 3 and set(listed) == {r.info.run_id for r in runs}
    by_hand, autologged, call = runs
    assert by_hand.info.run_name == "by-hand" and by_hand.data.metrics == {"loss_ratio": 0.5}
    assert autologged.data.tags["mlflow.autologging"] == "sklearn" and autologged.data.params
    assert call.data.tags["air.source"] == "distributed"
    for run in runs:  # each link opens the run's page in the embedded MLflow UI
        with pytest.raises(HTTPClientError) as redirect:
            await jp_fetch(*listed[run.info.run_id]["url"].split("/")[2:], follow_redirects=False)
        assert redirect.value.code == 302
        location = redirect.value.response.headers["Location"]
        assert location.startswith("/a%40b/mlflow/#/experiments/") and run.info.run_id in location
    assert {r.data.tags["air.notebook_path"] for r in runs} == {str(jp_root_dir / NOTEBOOK)}
    _nothing_beside_the_notebook(jp_root_dir)


def _plain_kernel(cells: list[str], cwd: pathlib.Path) -> list[tuple[str, str]]:
    """Run cells in a kernel another front end starts (jupyter_client, not the Jupyter server): (output, error)."""
    from jupyter_client.manager import KernelManager

    cwd.mkdir()
    manager = KernelManager(kernel_name="python3")
    manager.start_kernel(cwd=str(cwd))
    started = manager.client()
    started.start_channels()
    answers = []
    try:
        started.wait_for_ready(timeout=120)
        for code in cells:
            out, error = [], []

            def hook(msg, out=out, error=error):
                if msg["msg_type"] == "stream":
                    out.append(msg["content"]["text"])
                elif msg["msg_type"] == "error":
                    error.append("\n".join(msg["content"]["traceback"]))

            started.execute_interactive(code, timeout=120, output_hook=hook)
            answers.append(("".join(out), "".join(error)))
    finally:
        started.stop_channels()
        manager.shutdown_kernel(now=True)
    return answers


@pytest.mark.usefixtures("kernel_environment")
def test_a_kernel_of_another_front_end_is_told_where_calls_go_and_never_mixes_ids(tmp_path, store_uri):
    # Given a kernel another front end started, whose plain MLflow made a store beside the notebook (experiment 1)
    name = f"elsewhere-{uuid.uuid4().hex[:6]}"
    chosen = f"import mlflow\nprint(mlflow.set_experiment({name!r}).experiment_id, mlflow.get_tracking_uri())"
    assert client().get_experiment("1").name != name  # AIR_HOME's experiment 1 is another one

    # When a call runs there, and in a second such kernel after %load_ext jupyter_air
    (made, _), (out, error) = _plain_kernel([chosen, TRAIN + "ranks = train.distributed()"], tmp_path / "a")
    (_, _), (loaded, _) = _plain_kernel(["%load_ext jupyter_air", chosen], tmp_path / "b")

    # Then the call says in one line what it did, naming both stores, and records into the experiment of that name
    experiment_id, kernel_store = made.strip().splitlines()[-1].split()
    assert experiment_id == "1" and kernel_store == f"sqlite:///{tmp_path / 'a' / 'mlflow.db'}"
    assert not error
    (said,) = [line for line in out.splitlines() if "tracks into" in line]
    assert kernel_store in said and store_uri in said and repr(name) in said
    assert len(_runs(name)) == 1
    # And after %load_ext the kernel's MLflow uses AIR_HOME's store: nothing beside that notebook
    assert loaded.strip().splitlines()[-1].split()[1] == store_uri
    assert list((tmp_path / "b").iterdir()) == []
