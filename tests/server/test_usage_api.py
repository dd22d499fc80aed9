"""The GPU use route, against a real Jupyter server and a real SQLite MLflow store: what `air usage -o json` prints,
at the prices of the server's environment."""

from __future__ import annotations

import json

import pytest
from tornado.httpclient import HTTPClientError

from jupyter_air.tracking.energy import ENERGY_METRIC

HOUR_MS = 3_600_000


@pytest.fixture
def store_runs(tmp_path, monkeypatch):
    """A store of this test's own holding a 2-GPU call of alice's (3 h, 300 Wh) and a CPU call of bob's."""
    from mlflow import MlflowClient

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    client = MlflowClient(uri)
    experiment_id = client.create_experiment("usage-api")
    start = 1_000 * HOUR_MS
    for user, gpus, energy in (("alice", "2", 300.0), ("bob", "0", 0.0)):
        run_id = client.create_run(experiment_id, start_time=start, tags={"mlflow.user": user, "air.gpus": gpus})
        run_id = run_id.info.run_id
        client.log_metric(run_id, ENERGY_METRIC, energy, timestamp=start)
        client.set_terminated(run_id, "FINISHED", end_time=start + 3 * HOUR_MS)
    return start


async def test_use_by_user_at_the_servers_prices(jp_fetch, store_runs, monkeypatch):
    # Given the admin's prices in the server's environment
    monkeypatch.setenv("AIR_GPU_HOUR_PRICE", "1.5")
    monkeypatch.setenv("AIR_KWH_PRICE", "0.2")

    # When the use of the hours around the calls is asked
    window = {"from": str(store_runs - HOUR_MS), "to": str(store_runs + 4 * HOUR_MS)}
    answer = json.loads((await jp_fetch("jupyter-air", "usage", params=window)).body)

    # Then each user's GPU-hours, energy and cost are there, most GPU-hours first
    assert answer["by"] == "user" and answer["prices"] == {"gpu_hour": 1.5, "kwh": 0.2}
    assert [(r["key"], r["runs"], r["gpu_hours"], r["energy_wh"], r["cost"]) for r in answer["rows"]] == [
        ("alice", 1, 6.0, 300.0, 9.06),
        ("bob", 1, 0.0, 0.0, 0.0),
    ]


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        ({"by": "team"}, "cannot group by 'team': give one of user, experiment, day"),
        ({"from": "5", "to": "2"}, "the window is empty: its end must come after its start"),
        ({"from": "soon"}, "'from' must be a non-negative integer epoch time in milliseconds"),
    ],
)
async def test_a_query_that_cannot_be_answered_is_a_400_saying_what_to_give(
    jp_fetch, tmp_path, monkeypatch, params, expected
):
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{tmp_path / 'mlflow.db'}")

    with pytest.raises(HTTPClientError) as error:
        await jp_fetch("jupyter-air", "usage", params=params)

    assert error.value.code == 400 and expected in json.loads(error.value.response.body)["message"]
    assert not (tmp_path / "mlflow.db").exists()
