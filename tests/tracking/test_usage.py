"""GPU use per user, experiment and day from a real MLflow store's runs, and `air usage` over it: a store of each
test's own (a run still running counts in every later window)."""

from __future__ import annotations

import datetime
import json
import shutil

import pytest

from jupyter_air.cli import main
from jupyter_air.tracking.energy import ENERGY_METRIC
from jupyter_air.tracking.usage import BadUsageQuery, Prices, usage


def ms(day: int, hour: int) -> int:
    """Epoch ms of 2001-03-<day> <hour>:00 local time."""
    return int(datetime.datetime(2001, 3, day, hour).timestamp() * 1000)


def record(client, experiment: str, user: str, start: int, end: int | None, gpus: str, energy_wh: float = 0.0, **tags):
    """A run as a call or job records it: its user, its GPUs, its energy once ended."""
    found = client.get_experiment_by_name(experiment)
    experiment_id = found.experiment_id if found else client.create_experiment(experiment)
    run = client.create_run(experiment_id, start_time=start, tags={"mlflow.user": user, "air.gpus": gpus, **tags})
    if energy_wh:
        client.log_metric(run.info.run_id, ENERGY_METRIC, energy_wh, timestamp=end or start)
    if end is not None:
        client.set_terminated(run.info.run_id, "FINISHED", end_time=end)
    return run.info.run_id


@pytest.fixture(scope="module")
def empty_store(tmp_path_factory):
    """An empty MLflow SQLite store, made once: creating its tables costs seconds."""
    from mlflow import MlflowClient

    path = tmp_path_factory.mktemp("usage-store") / "empty.db"
    MlflowClient(f"sqlite:///{path}").search_experiments()
    return path


@pytest.fixture
def runs(store, empty_store, tmp_path, monkeypatch):
    """An MLflow client on a SQLite store of this test's own (a copy of the empty one), which `air` reads too."""
    from mlflow import MlflowClient

    uri = f"sqlite:///{shutil.copy(empty_store, tmp_path / 'usage.db')}"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    return MlflowClient(uri)


def team_runs(client, day: int):
    """On March ``day``: alice: 2 GPUs for 3 h, 600 Wh; bob: 1 simulated
    GPU since 12:00, still running; carol: CPU only; dave: 4 GPUs from 8:00 to 10:00."""
    record(client, "usage-vision", "alice", ms(day, 10), ms(day, 13), "2", 600.0)
    record(client, "usage-vision", "bob", ms(day, 12), None, "1", 50.0, **{"air.gpu_source": "simulated"})
    record(client, "usage-nlp", "carol", ms(day, 11), ms(day, 12), "0")
    record(client, "usage-nlp", "dave", ms(day, 8), ms(day, 10), "4", 900.0)


def test_use_per_user_counts_each_runs_gpus_and_energy_inside_the_window_at_the_admins_prices(runs):
    # Given the team's runs of March 5
    team_runs(runs, 5)

    # When the use from 11:00 to 14:00 is asked per user, at 2.5 per GPU-hour and 0.3 per kWh
    answer = usage(runs, "user", ms(5, 11), ms(5, 14), Prices(2.5, 0.3), now_ms=ms(5, 14))

    # Then alice's 2 GPUs count for their 2 h in it, with 2/3 of her energy; bob's run counts until now
    rows = {row["key"]: row for row in answer["rows"]}
    assert [row["key"] for row in answer["rows"]] == ["alice", "bob", "carol"]
    assert (rows["alice"]["gpu_hours"], rows["alice"]["energy_wh"], rows["alice"]["cost"]) == (4.0, 400.0, 10.12)
    # and bob's energy, measured on simulated GPUs, is kept apart and costs nothing; carol's run used no GPU
    assert (rows["bob"]["gpu_hours"], rows["bob"]["energy_wh"], rows["bob"]["simulated_energy_wh"]) == (2.0, 0.0, 50.0)
    assert rows["bob"]["cost"] == 5.0
    assert (rows["carol"]["runs"], rows["carol"]["gpu_hours"]) == (1, 0.0)
    # And dave's run, over before the window, is not there; the total adds up the rows
    assert answer["total"] == {
        "key": "total",
        "runs": 3,
        "gpu_hours": 6.0,
        "energy_wh": 400.0,
        "simulated_energy_wh": 50.0,
        "cost": 15.12,
    }


def test_use_per_experiment_and_per_day_splits_a_run_at_midnight(runs):
    # Given a 1-GPU run from 22:00 to 02:00 with 400 Wh, in its own experiment, and a run whose GPU tag is no count
    record(runs, "usage-night", "erin", ms(20, 22), ms(21, 2), "1", 400.0)
    record(runs, "usage-odd", "erin", ms(20, 10), ms(20, 11), "lots")
    window = (ms(20, 0), ms(22, 0))

    # When its use is asked per day and per experiment
    by_day = usage(runs, "day", *window, Prices())
    by_experiment = usage(runs, "experiment", *window, Prices())

    # Then each day has its 2 hours and half the energy, and the night's run counts once in the total
    assert [(r["key"], r["gpu_hours"], r["energy_wh"]) for r in by_day["rows"]] == [
        ("2001-03-20", 2.0, 200.0),
        ("2001-03-21", 2.0, 200.0),
    ]
    assert by_day["total"]["runs"] == 2
    assert [(r["key"], r["gpu_hours"]) for r in by_experiment["rows"]] == [("usage-night", 4.0), ("usage-odd", 0.0)]


def test_a_query_that_cannot_be_answered_says_what_to_give(runs, monkeypatch):
    with pytest.raises(BadUsageQuery, match="cannot group by 'team': give one of user, experiment, day"):
        usage(runs, "team", ms(5, 11), ms(5, 14), Prices())
    with pytest.raises(BadUsageQuery, match="its end must come after its start"):
        usage(runs, "user", ms(5, 14), ms(5, 11), Prices())
    monkeypatch.setenv("AIR_KWH_PRICE", "cheap")
    with pytest.raises(BadUsageQuery, match="AIR_KWH_PRICE='cheap': expected a price of 0 or more"):
        Prices.from_environment()


def test_air_usage_prints_a_table_with_names_written_out_and_json(runs, capsys):
    # Given the team's runs of March 6, erin's hour on simulated GPUs, and a user whose name holds a terminal escape
    team_runs(runs, 6)
    record(runs, "usage-vision", "erin", ms(6, 14), ms(6, 15), "1", 20.0, **{"air.gpu_source": "simulated"})
    record(runs, "usage-vision", "mallory\x1b]52;c;Zm9v\x07", ms(6, 12), ms(6, 13), "1")
    window = ["--since", "2001-03-06", "--until", "2001-03-07"]

    # When `air usage` prints its table and its JSON
    assert main(["usage", *window, "--gpu-hour-price", "2"]) == 0
    table = capsys.readouterr().out
    assert main(["usage", *window, "--by", "experiment", "-o", "json"]) == 0
    answer = json.loads(capsys.readouterr().out)

    # Then each user has a line, most GPU-hours first (bob's run counts until the window's end), with a total
    lines = table.splitlines()
    assert lines[0] == "GPU use from 2001-03-06 00:00:00 to 2001-03-07 00:00:00, by user"
    assert lines[1].split() == ["USER", "RUNS", "GPU-HOURS", "ENERGY", "(WH)", "COST"]
    assert [line.split()[0] for line in lines[2:9]] == [
        "bob",
        "dave",
        "alice",
        "erin",
        "mallory\\x1b]52;c;Zm9v\\x07",
        "carol",
        "total",
    ]
    assert lines[4].split() == ["alice", "1", "6.00", "600.00", "12.00"]
    assert lines[8].split() == ["total", "6", "28.00", "1500.00", "56.00"]
    assert "\x1b" not in table and "\x07" not in table
    assert "not counted: 20.00 Wh measured on simulated GPUs" in table
    assert [row["key"] for row in answer["rows"]] == ["usage-vision", "usage-nlp"]


def test_air_usage_refuses_a_bad_window_or_price_with_exit_2(runs, capsys, monkeypatch):
    assert main(["usage", "--since", "3x"]) == 2
    assert "air usage: error: --since '3x': expected a span back from now (7d, 24h)" in capsys.readouterr().err
    assert main(["usage", "--kwh-price", "-1"]) == 2
    assert "--kwh-price='-1': expected a price of 0 or more" in capsys.readouterr().err
    # and a malformed price variable fails only a report that reads it, naming it
    monkeypatch.setenv("AIR_KWH_PRICE", "cheap")
    assert main(["usage", "--kwh-price", "0.3", "-o", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["prices"] == {"gpu_hour": 0.0, "kwh": 0.3}
    assert main(["usage"]) == 2
    assert "AIR_KWH_PRICE='cheap': expected a price of 0 or more" in capsys.readouterr().err


def test_air_usage_on_a_store_nobody_made_yet_reports_nothing_and_creates_nothing(store, tmp_path, monkeypatch, capsys):
    path = tmp_path / "never.db"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{path}")

    assert main(["usage", "-o", "json"]) == 0

    assert json.loads(capsys.readouterr().out)["total"]["runs"] == 0
    assert not path.exists()
