"""Whether a driver fires the schedules: its ticks recorded (at most every 30 s; an injected clock), a job store from
before that migrated, and a schedule past its fire time with no driver running said by `air schedules list` and by
the panel's route."""

from __future__ import annotations

import json
from datetime import datetime, timezone

import pytest
from workload_helpers import write_workload

from jupyter_air.cli import main
from jupyter_air.workloads.jobs.jobs import Jobs
from jupyter_air.workloads.schedules.driver_ticks import Driver, stalled
from jupyter_air.workloads.schedules.schedules import Schedules
from jupyter_air.workloads.schedules.tick import tick
from jupyter_air.workloads.state.records import Schedule, now_ms
from jupyter_air.workloads.state.store import JobStore

HOUR = 3_600_000
T0 = round(datetime(2026, 1, 10, tzinfo=timezone.utc).timestamp() * 1000)


@pytest.fixture
def air_config(air_config):
    """The test server fires nothing by itself: its job checks are off (job_check_interval_seconds = 0)."""
    return {**air_config, "job_check_interval_seconds": 0}


def hourly(home, folder, at: int) -> Jobs:
    """An hourly schedule recorded at ``at`` (epoch ms) as `air run -f` records it; missed fires are skipped, so a
    late tick starts no job."""
    timing = {"quartz_cron_expression": "0 0 * * * ?", "timezone_id": "UTC", "catchup": "none"}
    path = write_workload(folder, experiment_name="hourly", command="python -c pass", schedule=timing)
    jobs = Jobs(home)
    Schedules(jobs).upsert(jobs.resolve_file(path), now=at)
    return jobs


def record(paused: bool, next_fire_ms: int | None) -> Schedule:
    return Schedule("s", "0 0 * * * ?", "UTC", paused, "once", 1, {}, "s.yaml", "me", None, next_fire_ms, T0, T0)


def test_a_tick_that_finds_nothing_due_is_recorded_at_most_every_30_s(tmp_path):
    # Given an hourly schedule recorded at 00:00:00, and no driver yet
    jobs = hourly(tmp_path / "air", tmp_path, at=T0)
    schedules = Schedules(jobs)
    assert schedules.listing(now=T0)[1] == Driver(None, False)

    # When a driver ticks at 00:00:01, 00:00:20 and 00:00:31, nothing due
    seen = []
    for at in (T0 + 1_000, T0 + 20_000, T0 + 31_000):
        assert tick(jobs, at) == []
        seen.append(schedules.listing(now=at)[1].last_tick_ms)

    # Then the first and the third are recorded: in between, a tick stays a read
    assert seen == [T0 + 1_000, T0 + 1_000, T0 + 31_000]


def test_a_schedule_past_its_fire_time_by_over_a_minute_waits_for_a_driver_until_one_ticks(tmp_path):
    # Given an hourly schedule recorded at 00:00, and a driver that ticked at 00:00:01, then stopped
    jobs = hourly(tmp_path / "air", tmp_path, at=T0)
    tick(jobs, T0 + 1_000)
    schedules = Schedules(jobs)

    # When it is listed a minute after its 01:00 fire time, and a millisecond later
    on_time, late = schedules.listing(now=T0 + HOUR + 60_000)[1], schedules.listing(now=T0 + HOUR + 60_001)[1]

    # Then only past the minute does it wait for a driver, the last one seen at 00:00:01
    assert on_time == Driver(T0 + 1_000, False) and late == Driver(T0 + 1_000, True)
    # When a driver starts at 03:30 (the missed fires are skipped: catchup none)
    fires = tick(jobs, T0 + 3 * HOUR + 1_800_000)
    # Then the schedule waits for 04:00, and no longer for a driver
    assert [f.outcome for f in fires] == ["SKIPPED"]
    assert schedules.listing(now=T0 + 3 * HOUR + 1_800_000)[1] == Driver(T0 + 3 * HOUR + 1_800_000, False)


def test_a_paused_schedule_or_one_whose_expression_ended_waits_for_no_driver():
    late = T0 - 61_000
    assert stalled([record(paused=False, next_fire_ms=late)], None, T0).stalled
    assert not stalled([record(paused=True, next_fire_ms=late)], None, T0).stalled
    assert not stalled([record(paused=False, next_fire_ms=None)], T0 - HOUR, T0).stalled


def test_a_job_store_from_before_driver_ticks_takes_its_last_fire_by_time_as_the_last_tick(tmp_path):
    # Given a job store as the release before left it: no driver_ticks, a timed fire at 01:00, a run-now at 02:00
    home = tmp_path / "air"
    hourly(home, tmp_path, at=T0)
    with JobStore(home).transaction(immediate=True) as db:
        db.execute("DROP TABLE driver_ticks")
        db.executemany(
            "INSERT INTO schedule_fires (name, scheduled_ms, fired_ms, outcome, manual) VALUES (?,?,?,?,?)",
            [
                ("hourly", T0 + HOUR, T0 + HOUR + 40, "SKIPPED", 0),
                ("hourly", T0 + 2 * HOUR, T0 + 2 * HOUR, "FAILED", 1),
            ],
        )

    # When a process of this release opens it and lists the schedules at 03:00
    listed = Schedules(Jobs(home)).listing(now=T0 + 3 * HOUR)

    # Then the table was made, and the last tick is that of the timed fire, not the run-now's
    assert listed[1] == Driver(T0 + HOUR + 40, True)


def test_air_schedules_list_says_since_when_no_driver_fired_and_how_to_start_one(air, tmp_path, capsys):
    # Given a schedule recorded a day ago, never fired
    day_ago = now_ms() - 24 * HOUR
    jobs = hourly(air.home, tmp_path, at=day_ago)

    # When it is listed, then listed again (as a table and as JSON) after a driver ticked a second after it was made
    never = main(["schedules", "list"]), capsys.readouterr()
    tick(jobs, day_ago + 1_000)
    table = main(["schedules", "list"]), capsys.readouterr()
    as_json = main(["schedules", "list", "-o", "json"]), capsys.readouterr()

    # Then stderr says that no driver has run, then since when, and how to start one; the listing is as before
    since = datetime.fromtimestamp((day_ago + 1_000) / 1000).astimezone()
    assert never[0] == 0 and "hourly" in never[1].out and "note: no driver has run yet, so the" in never[1].err
    assert table[0] == 0 and "hourly" in table[1].out
    notice = table[1].err
    assert notice.startswith(f"note: no driver has fired since {since:%Y-%m-%d %H:%M:%S} {since.tzname()} ("), notice
    assert "ago), so the schedules whose NEXT FIRE is past wait for one: start JupyterLab" in notice
    assert "`make run`" in notice and "`air scheduler` in a terminal" in notice
    # And the JSON on stdout stays a list of schedules: the note goes to stderr only
    assert as_json[0] == 0 and [s["name"] for s in json.loads(as_json[1].out)] == ["hourly"]
    assert as_json[1].err.startswith("note: no driver has fired since ")


async def test_the_schedules_route_says_whether_a_driver_fires_them(air, tmp_path, jp_fetch):
    # Given a server whose job checks are off, and a schedule recorded a day ago that no driver fired
    jobs = hourly(air.home, tmp_path, at=now_ms() - 24 * HOUR)

    # When the panel lists the schedules, before and after a driver ticks (the missed fires skipped: no job)
    before = json.loads((await jp_fetch("jupyter-air", "schedules")).body)
    now = now_ms()
    fires = tick(jobs, now)
    after = json.loads((await jp_fetch("jupyter-air", "schedules")).body)

    # Then the listing says that no driver ran and one is waited for, then when one ticked, and that none is
    assert before["driver"] == {"last_tick_ms": None, "stalled": True}
    assert [f.outcome for f in fires] == ["SKIPPED"]
    assert after["driver"] == {"last_tick_ms": now, "stalled": False}
    assert [s["name"] for s in after["schedules"]] == ["hourly"]
