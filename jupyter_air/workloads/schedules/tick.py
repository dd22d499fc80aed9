"""Fire the due schedules of one AIR_HOME: one idempotent ``tick(now)`` that any number of drivers (Jupyter servers,
`air scheduler` processes) may call at once; each due time is claimed by one of them only."""

from __future__ import annotations

import json
import sqlite3

from jupyter_air.error_kinds import CONFLICT
from jupyter_air.tracking.naming import SCHEDULE_TAG, SCHEDULED_TIME_TAG
from jupyter_air.workloads.file.cron import as_ms, iso, next_fires, previous_fire
from jupyter_air.workloads.jobs.jobs import Jobs, SubmitError
from jupyter_air.workloads.schedules import driver_ticks
from jupyter_air.workloads.schedules.schedules import ScheduleNotFound
from jupyter_air.workloads.state.permissions import schedule_target
from jupyter_air.workloads.state.records import ACTIVE, Fire, Schedule, now_ms, schedule_from_row

#: A fire time found later than this counts as missed (no driver ran then): the schedule's ``catchup`` decides.
LATE_SECONDS = 60
#: A fire still SUBMITTING after this long lost its driver while submitting.
STALE_SUBMIT_SECONDS = 300
#: Fires kept per schedule (the oldest are forgotten).
KEEP_FIRES = 100
#: Missed fire times counted one by one; past this, a catch-up fire stands for "more".
MAX_COUNTED = 10_000
_TAG = f"""json_extract(workload, '$.tags."{SCHEDULE_TAG}"')"""


class Busy(RuntimeError):
    """The schedule has ``max_concurrent_runs`` jobs active: a run-now would exceed it."""

    kind = CONFLICT


def tick(jobs: Jobs, now: int | None = None) -> list[Fire]:
    """Claim every schedule due at ``now`` (epoch ms, default the clock) in one write transaction that moves its
    next fire time on (compare-and-set), then submit each claimed fire's job through :meth:`Jobs.submit`. Returns
    the fires recorded: SUBMITTED, SKIPPED (with the reason) or FAILED. Records the tick (``driver_ticks``); never
    creates the job store."""
    if not (jobs.home / "jobs.db").exists():
        return []
    now = now_ms() if now is None else now
    store = jobs.store
    with store.transaction() as db:  # a read: most ticks find nothing due and never take the write lock
        due = db.execute("SELECT 1 FROM schedules WHERE next_fire_ms <= ? LIMIT 1", (now,)).fetchone()
        last_tick = driver_ticks.last_tick_ms(db)
    if due is None:
        if driver_ticks.record_due(last_tick, now):  # every RECORD_SECONDS: "no driver runs" can be told
            with store.transaction(immediate=True) as db:
                driver_ticks.record(db, now)
        return []
    claimed: list[tuple[Schedule, Fire]] = []
    with store.transaction(immediate=True) as db:
        driver_ticks.record(db, now)
        for row in db.execute("SELECT * FROM schedules WHERE next_fire_ms <= ?", (now,)).fetchall():
            schedule = schedule_from_row(row, [])
            fire, following = _plan(schedule, now)
            moved = db.execute(
                "UPDATE schedules SET next_fire_ms = ? WHERE name = ? AND next_fire_ms = ?",
                (following, schedule.name, schedule.next_fire_ms),
            )
            if moved.rowcount != 1:
                continue  # another driver claimed this due time first
            if fire.outcome == "SUBMITTING":
                busy = _active(db, schedule)
                if len(busy) >= schedule.max_concurrent_runs:
                    fire.outcome, fire.reason = "SKIPPED", _busy_reason(schedule, busy)
            _record(db, fire)
            claimed.append((schedule, fire))
    return [_submit(jobs, s, f) if f.outcome == "SUBMITTING" else f for s, f in claimed]


def run_now(jobs: Jobs, name: str, now: int | None = None) -> Fire:
    """Fire schedule ``name`` once now, paused or not (its timetable is unchanged); raises Busy when it has
    ``max_concurrent_runs`` jobs active, ScheduleNotFound when there is no such schedule."""
    now = now_ms() if now is None else now
    with jobs.store.transaction(immediate=True) as db:
        row = db.execute("SELECT * FROM schedules WHERE name = ?", (name,)).fetchone()
        if row is None:
            raise ScheduleNotFound(name, jobs.home)
        schedule = schedule_from_row(row, [])
        if jobs.caller is not None:
            jobs.permissions.require(schedule_target(schedule), "run-now")
        busy = _active(db, schedule)
        if len(busy) >= schedule.max_concurrent_runs:
            raise Busy(_busy_reason(schedule, busy) + "; wait for it or `air cancel` it")
        fire = Fire(name, now, now_ms(), "SUBMITTING", manual=True)
        _record(db, fire)
    return _submit(jobs, schedule, fire)


def _plan(schedule: Schedule, now: int) -> tuple[Fire, int | None]:
    """What to do for a due schedule at ``now``, and its next fire time after ``now``."""
    latest, windows, following, size = schedule.next_fire_ms, 1, None, 2
    while following is None and windows <= MAX_COUNTED:
        batch = [as_ms(t) for t in next_fires(schedule.expression, schedule.timezone, latest, size)]
        size = min(size * 4, 1000)
        if not batch:
            break  # the expression ends (its year is past)
        for at in batch:
            if at > now:
                following = at
                break
            latest, windows = at, windows + 1
    if following is None and windows > MAX_COUNTED:  # down for a very long time: the latest, then the next
        latest = max(latest, previous_fire(schedule.expression, schedule.timezone, now))
        found = next_fires(schedule.expression, schedule.timezone, now, 1)
        following = as_ms(found[0]) if found else None
    on_time = now - latest <= LATE_SECONDS * 1000
    fire = Fire(schedule.name, latest, now_ms(), "SUBMITTING", windows=windows)
    missed = windows if not on_time else windows - 1
    if missed and schedule.catchup == "once":
        fire.reason = f"catch-up: one job for {_count(windows)} fire time(s) missed while no driver ran"
    elif missed and on_time:
        fire.windows, fire.reason = 1, f"{_count(missed)} earlier missed fire time(s) skipped (catchup: none)"
    elif missed:
        fire.outcome = "SKIPPED"
        fire.reason = f"{_count(missed)} fire time(s) missed while no driver ran (catchup: none)"
    return fire, following


def _count(windows: int) -> str:
    return f"more than {MAX_COUNTED}" if windows > MAX_COUNTED else str(windows)


def _active(db: sqlite3.Connection, schedule: Schedule) -> list[str]:
    """The jobs of ``schedule`` still active, and its fires still being submitted (a job not yet recorded)."""
    rows = db.execute(
        f"SELECT job_run_id, workload FROM jobs WHERE status IN ({','.join('?' * len(ACTIVE))}) AND {_TAG} = ?",
        (*ACTIVE, schedule.name),
    ).fetchall()
    times = {json.loads(r["workload"])["tags"].get(SCHEDULED_TIME_TAG) for r in rows}
    busy = [r["job_run_id"] for r in rows]
    pending = db.execute(
        "SELECT scheduled_ms, fired_ms FROM schedule_fires WHERE name = ? AND outcome = 'SUBMITTING'",
        (schedule.name,),
    ).fetchall()
    for p in pending:
        if p["fired_ms"] < now_ms() - STALE_SUBMIT_SECONDS * 1000:
            _give_up(db, schedule, p["scheduled_ms"])
        elif iso(p["scheduled_ms"], schedule.timezone) not in times:
            busy.append(f"the job of {iso(p['scheduled_ms'], schedule.timezone)} (being submitted)")
    return busy


def _give_up(db: sqlite3.Connection, schedule: Schedule, scheduled_ms: int) -> None:
    """End a fire whose driver stopped while submitting it: SUBMITTED if its job was recorded, else FAILED."""
    when = iso(scheduled_ms, schedule.timezone)
    job = db.execute(
        f"SELECT job_run_id FROM jobs WHERE {_TAG} = ? AND json_extract(workload, '$.tags.\"air.scheduled_time\"') = ?",
        (schedule.name, when),
    ).fetchone()
    outcome, reason = ("SUBMITTED", None) if job else ("FAILED", "its driver stopped while submitting the job")
    db.execute(
        "UPDATE schedule_fires SET outcome = ?, job_run_id = ?, reason = ? WHERE name = ? AND scheduled_ms = ?",
        (outcome, job["job_run_id"] if job else None, reason, schedule.name, scheduled_ms),
    )


def _busy_reason(schedule: Schedule, busy: list[str]) -> str:
    return (
        f"{len(busy)} job(s) of this schedule still active ({', '.join(busy)}); "
        f"max_concurrent_runs is {schedule.max_concurrent_runs}"
    )


def _record(db: sqlite3.Connection, fire: Fire) -> None:
    db.execute(
        "INSERT INTO schedule_fires (name, scheduled_ms, fired_ms, outcome, job_run_id, reason, windows, manual)"
        " VALUES (?,?,?,?,?,?,?,?)",
        (fire.name, fire.scheduled_ms, fire.fired_ms, fire.outcome, None, fire.reason, fire.windows, int(fire.manual)),
    )
    db.execute(
        "DELETE FROM schedule_fires WHERE name = ? AND scheduled_ms < (SELECT scheduled_ms FROM schedule_fires"
        " WHERE name = ? ORDER BY scheduled_ms DESC LIMIT 1 OFFSET ?)",
        (fire.name, fire.name, KEEP_FIRES - 1),
    )


def fired_workload(schedule: Schedule, scheduled_ms: int) -> dict:
    """What one fire submits: the schedule's workload, its runs named and tagged with the fire time."""
    when = iso(scheduled_ms, schedule.timezone)
    spec = dict(schedule.workload)
    spec["mlflow_run_name"] = f"{spec.get('mlflow_run_name') or spec['experiment_name']} {when}"
    spec["tags"] = {**spec.get("tags", {}), SCHEDULE_TAG: schedule.name, SCHEDULED_TIME_TAG: when}
    return spec


def _submit(jobs: Jobs, schedule: Schedule, fire: Fire) -> Fire:
    """Submit a claimed fire's job through the one submission path, and record what came of it."""
    try:
        job = jobs.submit(
            fired_workload(schedule, fire.scheduled_ms),
            source=schedule.source,
            user=schedule.user,
            ray_address=schedule.ray_address,
        )
    except SubmitError as err:
        fire.outcome, fire.reason = "FAILED", "; ".join(err.problems)[:4000]
    except Exception as err:  # noqa: BLE001 - recorded on the fire; the driver goes on with the other schedules
        fire.outcome, fire.reason = "FAILED", f"{type(err).__name__}: {err}"[:4000]
    else:
        fire.outcome, fire.job_run_id = "SUBMITTED", job.job_run_id
    with jobs.store.transaction(immediate=True) as db:
        db.execute(
            "UPDATE schedule_fires SET outcome = ?, job_run_id = ?, reason = ? WHERE name = ? AND scheduled_ms = ?",
            (fire.outcome, fire.job_run_id, fire.reason, fire.name, fire.scheduled_ms),
        )
    return fire
