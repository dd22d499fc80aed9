"""`tick(now)` with an injected clock: fire times, DST, catch-up, overlap, pause/resume, delete; real jobs."""

from __future__ import annotations

from datetime import datetime
from zoneinfo import ZoneInfo

import pytest
from workload_helpers import write_workload

from jupyter_air.workloads.jobs.jobs import Jobs
from jupyter_air.workloads.schedules.schedules import Schedules
from jupyter_air.workloads.schedules.tick import tick

SLEEPER = "python -c 'import time; time.sleep(120)'"


def ms(text: str, zone: str = "UTC") -> int:
    return round(datetime.fromisoformat(text).replace(tzinfo=ZoneInfo(zone)).timestamp() * 1000)


def schedule(air, tmp_path, expression, *, at, zone="UTC", command="python -c pass", name="nightly", **timing):
    """A schedule recorded at ``at`` (epoch ms) from a workload file, as `air run -f` records it."""
    spec = {"quartz_cron_expression": expression, "timezone_id": zone, **timing}
    path = write_workload(tmp_path, f"{name}.yaml", experiment_name=name, command=command, schedule=spec)
    jobs = Jobs(air.home)
    Schedules(jobs).upsert(jobs.resolve_file(path), now=at)
    return jobs


def fired(fires) -> list[tuple[str, int]]:
    return [(f.outcome, f.scheduled_ms) for f in fires]


def test_every_10_s_fires_each_due_time_once(air, tmp_path, mlflow_client):
    # Given a schedule every 10 s recorded at 00:00:01
    t0 = ms("2026-01-10T00:00:00")
    jobs = schedule(air, tmp_path, "*/10 * * * * ?", at=t0 + 1_000, max_concurrent_runs=5)

    # When drivers tick before, at, again at and after each due time
    early = tick(jobs, t0 + 9_999)
    first, again, between = tick(jobs, t0 + 10_000), tick(jobs, t0 + 10_000), tick(jobs, t0 + 15_000)
    second = tick(jobs, t0 + 20_500)

    # Then each due time fires exactly once, and the next due time moves on
    assert early == [] and again == [] and between == []
    assert fired(first) == [("SUBMITTED", t0 + 10_000)]
    assert fired(second) == [("SUBMITTED", t0 + 20_000)]
    assert Schedules(jobs).get("nightly").next_fire_ms == t0 + 30_000
    # And each fire is one job whose run is named and tagged with its fire time
    job = air.wait(first[0].job_run_id)
    assert job["status"] == "SUCCEEDED"
    run = mlflow_client.get_run(job["mlflow_run_id"])
    assert run.data.tags["air.schedule"] == "nightly"
    assert run.data.tags["air.scheduled_time"] == "2026-01-10T00:00:10+00:00"
    assert run.info.run_name == "nightly 2026-01-10T00:00:10+00:00"
    listed = {j.job_run_id for j in jobs.list(active_only=False, schedule="nightly")}
    assert listed == {first[0].job_run_id, second[0].job_run_id}


@pytest.mark.parametrize(
    "zone, days, expected",
    [
        # Lisbon: 29 March 2026 clocks go 01:00 -> 02:00 (WET +00 -> WEST +01)
        ("Europe/Lisbon", ["2026-03-28", "2026-03-29", "2026-03-30"], ["+00:00", "+01:00", "+01:00"]),
        # Sao Paulo: 4 November 2018 clocks went 00:00 -> 01:00 (-03 -> -02)
        ("America/Sao_Paulo", ["2018-11-03", "2018-11-04", "2018-11-05"], ["-03:00", "-02:00", "-02:00"]),
    ],
)
def test_daily_at_02_follows_the_time_zone_across_a_dst_change(zone, days, expected, air, tmp_path):
    # Given a schedule at 02:00 daily in a zone whose clocks change
    jobs = schedule(air, tmp_path, "0 0 2 * * ?", at=ms(f"{days[0]}T00:00:00", zone), zone=zone, max_concurrent_runs=5)

    # When drivers tick a second before and at 02:00 local on each day
    seen = []
    for day in days:
        due = ms(f"{day}T02:00:00", zone)
        assert tick(jobs, due - 1_000) == []
        seen += tick(jobs, due)

    # Then each day fires once, at 02:00 on that day's clock
    assert [f.scheduled_ms for f in seen] == [ms(f"{d}T02:00:00", zone) for d in days]
    tags = [jobs.get(f.job_run_id).workload["tags"]["air.scheduled_time"] for f in seen]
    assert tags == [f"{d}T02:00:00{offset}" for d, offset in zip(days, expected, strict=True)]


@pytest.mark.parametrize("catchup, outcomes", [("once", ["SUBMITTED"]), ("none", ["SKIPPED"])])
def test_three_missed_fires_give_one_job_with_once_and_none_with_none(catchup, outcomes, air, tmp_path):
    # Given an hourly schedule recorded at 00:30, and no driver running from then until 03:30
    t0 = ms("2026-02-01T00:00:00")
    jobs = schedule(air, tmp_path, "0 0 * * * ?", at=t0 + 1_800_000, catchup=catchup)

    # When a driver starts at 03:30 (01:00, 02:00 and 03:00 were missed) and ticks twice
    fires = tick(jobs, t0 + 3 * 3_600_000 + 1_800_000) + tick(jobs, t0 + 3 * 3_600_000 + 1_801_000)

    # Then `once` fires one job for the three, `none` records them skipped and fires nothing
    assert [f.outcome for f in fires] == outcomes
    assert fires[0].scheduled_ms == t0 + 3 * 3_600_000 and fires[0].windows == 3
    assert "3 fire time(s) missed" in fires[0].reason
    assert len(jobs.list(active_only=False, schedule="nightly")) == len([o for o in outcomes if o == "SUBMITTED"])
    # And both wait for 04:00 next
    assert Schedules(jobs).get("nightly").next_fire_ms == t0 + 4 * 3_600_000


def test_a_fire_while_the_previous_job_runs_is_skipped_with_the_reason(air, tmp_path):
    # Given a schedule every 10 s whose job runs for minutes, at most one at a time
    t0 = ms("2026-01-10T00:00:00")
    jobs = schedule(air, tmp_path, "*/10 * * * * ?", at=t0, command=SLEEPER)
    first = tick(jobs, t0 + 10_000)
    air.wait(first[0].job_run_id, until=lambda job: job["status"] == "RUNNING")

    # When the next due time comes while it runs
    second = tick(jobs, t0 + 20_000)

    # Then that fire is recorded SKIPPED, naming the job still active, and no job is queued
    assert fired(second) == [("SKIPPED", t0 + 20_000)]
    assert first[0].job_run_id in second[0].reason and "max_concurrent_runs is 1" in second[0].reason
    assert [f.outcome for f in Schedules(jobs).get("nightly").fires] == ["SKIPPED", "SUBMITTED"]
    assert len(jobs.list(schedule="nightly")) == 1
    # And once that job has ended, the next due time fires again
    jobs.cancel(first[0].job_run_id)
    assert fired(tick(jobs, t0 + 30_000)) == [("SUBMITTED", t0 + 30_000)]


def test_a_paused_schedule_fires_nothing_and_resumes_without_catching_up(air, tmp_path):
    # Given a schedule every 10 s, paused
    t0 = ms("2026-01-10T00:00:00")
    jobs = schedule(air, tmp_path, "*/10 * * * * ?", at=t0)
    schedules = Schedules(jobs)
    schedules.pause("nightly")

    # When its due times pass, then it is resumed at 00:01:05 and ticked
    quiet = tick(jobs, t0 + 10_000) + tick(jobs, t0 + 60_000)
    resumed = schedules.resume("nightly", now=t0 + 65_000)
    after = tick(jobs, t0 + 65_000) + tick(jobs, t0 + 70_000)

    # Then nothing fired while paused, nothing is caught up, and it fires from its next due time on
    assert quiet == []
    assert resumed.next_fire_ms == t0 + 70_000
    assert fired(after) == [("SUBMITTED", t0 + 70_000)]


def test_deleting_a_schedule_while_its_job_runs_stops_the_fires_not_the_job(air, tmp_path):
    # Given a schedule whose job is running
    t0 = ms("2026-01-10T00:00:00")
    jobs = schedule(air, tmp_path, "*/10 * * * * ?", at=t0, command=SLEEPER)
    job_run_id = tick(jobs, t0 + 10_000)[0].job_run_id
    air.wait(job_run_id, until=lambda job: job["status"] == "RUNNING")

    # When the schedule is deleted and its due times pass
    Schedules(jobs).delete("nightly")
    later = tick(jobs, t0 + 20_000) + tick(jobs, t0 + 60_000)

    # Then nothing fires, the job goes on, and it is still found by its schedule's name
    assert later == []
    assert Schedules(jobs).list() == []
    assert jobs.get(job_run_id).status == "RUNNING"
    assert [j.job_run_id for j in jobs.list(schedule="nightly")] == [job_run_id]
