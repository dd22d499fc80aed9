"""The schedules of one AIR_HOME: create or update one from a workload file, read, pause, resume and delete them.
Firing them is ``workloads.schedules.tick``'s."""

from __future__ import annotations

import getpass
import json

from jupyter_air.error_kinds import NOT_FOUND
from jupyter_air.workloads.file.cron import as_ms, next_fires
from jupyter_air.workloads.jobs.jobs import Jobs, Resolved
from jupyter_air.workloads.schedules.driver_ticks import Driver, last_tick_ms, stalled
from jupyter_air.workloads.state.permissions import Forbidden, schedule_target
from jupyter_air.workloads.state.records import Fire, Schedule, fire_from_row, now_ms, schedule_from_row

#: Fires of a schedule shown by ``get`` (the store keeps ``tick.KEEP_FIRES``).
SHOWN_FIRES = 20


class ScheduleNotFound(LookupError):
    """No schedule of that name under this AIR_HOME."""

    kind = NOT_FOUND

    def __init__(self, name: str, home: object):
        super().__init__(f"no schedule {name[:250]!r} under AIR_HOME {home}")


class Schedules:
    """The schedules in the job store of ``jobs`` (default: ``$AIR_HOME``'s); blocking (SQLite): off event loops."""

    def __init__(self, jobs: Jobs | None = None):
        self.jobs = jobs or Jobs()

    def upsert(
        self, resolved: Resolved, *, ray_address: str | None = None, user: str | None = None, now: int | None = None
    ) -> tuple[Schedule, bool]:
        """Create the schedule of a resolved workload with a ``schedule:``, or update the one of the same name (its
        experiment); nothing runs now. Its next fire time stays when its expression and time zone do. Returns the
        schedule and whether it is new. ``user`` (default: this process's) owns it, and its jobs run as them: another
        user's schedule of that name is Forbidden, whatever their grants."""
        spec = dict(resolved.workload)
        timing = spec.pop("schedule")
        name, now, user = spec["experiment_name"], now_ms() if now is None else now, user or getpass.getuser()
        expression, timezone = timing["quartz_cron_expression"], timing["timezone_id"]
        paused = timing["pause_status"] == "PAUSED"
        with self.jobs.store.transaction(immediate=True) as db:
            old = db.execute("SELECT * FROM schedules WHERE name = ?", (name,)).fetchone()
            if old is not None and old["user"] != user:
                raise Forbidden(
                    f"schedule {name!r} is {old['user']}'s: only they can change what it runs (its jobs run as them);"
                    " give your workload another experiment_name, or ask them to change it"
                )
            same_time = old is not None and (old["expression"], old["timezone"]) == (expression, timezone)
            if paused:
                due = None
            elif same_time and old["next_fire_ms"] is not None:
                due = old["next_fire_ms"]
            else:
                due = _next(expression, timezone, now)
            db.execute(
                "INSERT INTO schedules (name, expression, timezone, paused, catchup, max_concurrent_runs, workload,"
                " source, user, ray_address, next_fire_ms, created_ms, updated_ms) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)"
                " ON CONFLICT (name) DO UPDATE SET expression = excluded.expression, timezone = excluded.timezone,"
                " paused = excluded.paused, catchup = excluded.catchup, max_concurrent_runs ="
                " excluded.max_concurrent_runs, workload = excluded.workload, source = excluded.source, user ="
                " excluded.user, ray_address = excluded.ray_address, next_fire_ms = excluded.next_fire_ms,"
                " updated_ms = excluded.updated_ms",
                (
                    name,
                    expression,
                    timezone,
                    int(paused),
                    timing["catchup"],
                    timing["max_concurrent_runs"],
                    json.dumps(spec),
                    resolved.source,
                    user,
                    ray_address,
                    due,
                    now,
                    now,
                ),
            )
        return self.get(name), old is None

    def get(self, name: str, fires: int = SHOWN_FIRES, action: str = "view") -> Schedule:
        """The schedule ``name`` with its latest ``fires``, newest first, once the caller may do ``action`` to it;
        raises ScheduleNotFound (or Forbidden)."""
        found = self._read(name, fires)
        if not found:
            raise ScheduleNotFound(name, self.jobs.home)
        if self.jobs.caller is not None:
            self.jobs.permissions.require(schedule_target(found[0]), action)
        return found[0]

    def list(self, fires: int = 1) -> list[Schedule]:
        """Every schedule the caller may see by name, each with its latest ``fires``; never creates the store."""
        found = self._read(None, fires)
        if self.jobs.caller is None:
            return found
        shown = self.jobs.permissions.visible([schedule_target(schedule) for schedule in found])
        return [schedule for schedule, seen in zip(found, shown, strict=True) if seen]

    def listing(self, now: int | None = None) -> tuple[list[Schedule], Driver]:
        """:meth:`list`, and whether a driver fires those schedules at ``now`` (epoch ms, default the clock)."""
        found = self.list()
        return found, stalled(found, self._last_tick(), now_ms() if now is None else now)

    def _last_tick(self) -> int | None:
        if not (self.jobs.home / "jobs.db").exists():
            return None
        with self.jobs.store.transaction() as db:
            return last_tick_ms(db)

    def _read(self, name: str | None, fires: int) -> list[Schedule]:
        if not (self.jobs.home / "jobs.db").exists():
            return []
        where, args = ("WHERE name = ?", (name,)) if name is not None else ("", ())
        with self.jobs.store.transaction() as db:
            rows = db.execute(f"SELECT * FROM schedules {where} ORDER BY name", args).fetchall()
            recent = {
                row["name"]: [
                    fire_from_row(f)
                    for f in db.execute(
                        "SELECT * FROM schedule_fires WHERE name = ? ORDER BY scheduled_ms DESC LIMIT ?",
                        (row["name"], fires),
                    )
                ]
                for row in rows
            }
        return [schedule_from_row(row, recent[row["name"]]) for row in rows]

    def pause(self, name: str) -> Schedule:
        """Stop firing ``name`` (its running jobs go on) until :meth:`resume`."""
        self.get(name, fires=0, action="pause")
        self._set(name, paused=1, next_fire_ms=None)
        return self.get(name)

    def resume(self, name: str, now: int | None = None) -> Schedule:
        """Fire ``name`` again from its next fire time after ``now``; fires missed while paused are not caught up."""
        schedule = self.get(name, fires=0, action="pause")
        if schedule.paused:
            due = _next(schedule.expression, schedule.timezone, now_ms() if now is None else now)
            self._set(name, paused=0, next_fire_ms=due)
        return self.get(name)

    def delete(self, name: str) -> Schedule:
        """Remove ``name`` and its fire history; jobs it started go on (`air cancel` stops them)."""
        schedule = self.get(name, action="delete")
        with self.jobs.store.transaction(immediate=True) as db:
            db.execute("DELETE FROM permissions WHERE target = ?", (schedule_target(schedule).key,))
            db.execute("DELETE FROM schedules WHERE name = ?", (name,))
            db.execute("DELETE FROM schedule_fires WHERE name = ?", (name,))
        return schedule

    def next_due_ms(self) -> int | None:
        """The earliest next fire time of any unpaused schedule (None: none will fire)."""
        if not (self.jobs.home / "jobs.db").exists():
            return None
        with self.jobs.store.transaction() as db:
            return db.execute("SELECT MIN(next_fire_ms) FROM schedules").fetchone()[0]

    def _set(self, name: str, **values) -> None:
        sets = ", ".join(f"{key} = ?" for key in values)
        with self.jobs.store.transaction(immediate=True) as db:
            cur = db.execute(
                f"UPDATE schedules SET {sets}, updated_ms = ? WHERE name = ?", (*values.values(), now_ms(), name)
            )
        if cur.rowcount != 1:
            raise ScheduleNotFound(name, self.jobs.home)


def keep(jobs: Jobs, resolved: Resolved, user: str | None = None) -> dict:
    """A submitted workload with a ``schedule:`` kept as ``user``'s schedule (nothing runs now): what ``POST jobs``
    answers for it, ``{"created", "schedule"}``."""
    schedule, created = Schedules(jobs).upsert(resolved, user=user)
    return {"created": created, "schedule": schedule_json(schedule)}


def upcoming(schedule: Schedule, count: int = 3, now: int | None = None) -> list[int]:
    """The next ``count`` fire times (epoch ms) after ``now``, paused or not."""
    after = now_ms() if now is None else now
    return [as_ms(t) for t in next_fires(schedule.expression, schedule.timezone, after, count)]


def _next(expression: str, timezone: str, after: int) -> int | None:
    found = next_fires(expression, timezone, after, 1)
    return as_ms(found[0]) if found else None


def schedule_json(schedule: Schedule, now: int | None = None) -> dict:
    """The documented JSON shape of a schedule (``air schedules get -o json``)."""
    return {
        "name": schedule.name,
        "quartz_cron_expression": schedule.expression,
        "timezone_id": schedule.timezone,
        "pause_status": schedule.pause_status,
        "catchup": schedule.catchup,
        "max_concurrent_runs": schedule.max_concurrent_runs,
        "next_fire_ms": schedule.next_fire_ms,
        "next_fire_times_ms": upcoming(schedule, 3, now),
        "experiment_name": schedule.workload["experiment_name"],
        "command": schedule.workload.get("command"),
        "source": schedule.source,
        "user": schedule.user,
        "created_ms": schedule.created_ms,
        "updated_ms": schedule.updated_ms,
        "fires": [fire.to_json() for fire in schedule.fires],
    }


def schedule_from_json(data: dict) -> Schedule:
    """The schedule a :func:`schedule_json` describes, as a record to print (what a job service answers, shown as
    `air` shows the user's own); its workload holds only the experiment and the command."""
    workload = {"experiment_name": data["experiment_name"], "command": data.get("command") or "-"}
    fires = [Fire(data["name"], **fire) for fire in data.get("fires", [])]
    return Schedule(
        name=data["name"],
        expression=data["quartz_cron_expression"],
        timezone=data["timezone_id"],
        paused=data["pause_status"] == "PAUSED",
        catchup=data["catchup"],
        max_concurrent_runs=data["max_concurrent_runs"],
        workload=workload,
        source=data["source"],
        user=data["user"],
        ray_address=None,
        next_fire_ms=data["next_fire_ms"],
        created_ms=data["created_ms"],
        updated_ms=data["updated_ms"],
        fires=fires,
    )
