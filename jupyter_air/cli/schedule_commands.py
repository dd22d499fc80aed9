"""`air schedules ...`, `air scheduler`, and `air run -f` of a workload with a `schedule:`: calls of
``workloads.schedules.schedules`` and ``workloads.schedules.tick``, formatted."""

from __future__ import annotations

import argparse
import difflib
import signal
import sys
import threading
import time
from datetime import datetime

from jupyter_air.error_kinds import BAD_INPUT, CONFLICT
from jupyter_air.format import duration, visible
from jupyter_air.workloads.file.cron import shown
from jupyter_air.workloads.jobs.jobs import Jobs, Resolved
from jupyter_air.workloads.schedules.schedules import ScheduleNotFound, Schedules, schedule_json, upcoming
from jupyter_air.workloads.schedules.tick import Busy, run_now, tick
from jupyter_air.workloads.state.records import Fire, Schedule, now_ms

from . import output
from .errors import CliError

#: Seconds between two reaps of dead supervisors by `air scheduler` (a dead job would hold max_concurrent_runs).
REAP_SECONDS = 5.0
#: How to start a driver of the schedules under AIR_HOME.
START_DRIVER = "start JupyterLab (with jupyter_air; `make run` in its checkout), or run `air scheduler` in a terminal"


def add_parsers(sub, json_help: str) -> None:
    driver = sub.add_parser("scheduler", help="fire due schedules in the foreground (no Jupyter server needed)")
    driver.add_argument("--interval", type=float, default=1.0, metavar="SECONDS", help="longest wait between checks")
    driver.add_argument("--once", action="store_true", help="fire what is due now, then exit")
    schedules = sub.add_parser("schedules", help="list, inspect, pause, resume, delete or run schedules")
    actions = schedules.add_subparsers(dest="action", metavar="ACTION", required=True)
    listed = actions.add_parser("list", help="every schedule, its next fire and its last one")
    listed.add_argument("-o", "--output", choices=["json"], help=json_help)
    for action, text in [
        ("get", "one schedule and its latest fires"),
        ("pause", "stop firing (running jobs go on)"),
        ("resume", "fire again from the next fire time (missed ones are not caught up)"),
        ("delete", "remove the schedule and its fire history (running jobs go on)"),
        ("run-now", "fire one job now, paused or not, within max_concurrent_runs"),
    ]:
        one = actions.add_parser(action, help=text)
        one.add_argument("name", metavar="NAME", help="the schedule's name: its experiment_name")
        one.add_argument("-o", "--output", choices=["json"], help=json_help)


def create(jobs: Jobs, resolved: Resolved, args: argparse.Namespace) -> int:
    """`air run -f` of a workload with a schedule: record it; nothing runs now."""
    if args.watch:
        raise CliError("--watch follows a job, and a schedule starts none now; drop --watch", BAD_INPUT)
    schedule, created = Schedules(jobs).upsert(resolved, ray_address=args.ray_address)
    return announce(schedule, created, args, "a Jupyter server with jupyter_air, or `air scheduler`")


def announce(schedule: Schedule, created: bool, args: argparse.Namespace, driver: str) -> int:
    """Print a created or updated schedule and its next fires; ``driver``: what fires it."""
    if args.output == "json":
        output.print_json({"created": created, "schedule": schedule_json(schedule)})
        return 0
    verb, name = ("created" if created else "updated"), visible(schedule.name)
    print(f"schedule {name} {verb}: {schedule.expression} ({schedule.timezone}); nothing runs now")
    if schedule.paused:
        print(f"PAUSED: it fires once resumed (air schedules resume {name}), next at:")
    else:
        print("next fires:")
    for at in upcoming(schedule):
        print(f"  {shown(at, schedule.timezone)}")
    print(f"fires need a driver running: {driver}", file=sys.stderr)
    return 0


def dispatch(jobs: Jobs, args: argparse.Namespace) -> int:
    if args.command == "scheduler":
        return scheduler(jobs, args)
    schedules = Schedules(jobs)
    if args.action == "list":
        return list_schedules(schedules, args)
    try:
        return {"get": get, "pause": pause, "resume": resume, "delete": delete, "run-now": fire_now}[args.action](
            schedules, args
        )
    except ScheduleNotFound as err:
        names = [s.name for s in schedules.list()]
        close = difflib.get_close_matches(args.name, names, n=1)
        hint = f"; did you mean '{close[0]}'?" if close else "; `air schedules list` lists them"
        raise CliError(f"{err}{hint}", err.kind) from None


def list_schedules(schedules: Schedules, args: argparse.Namespace, start: str = START_DRIVER) -> int:
    """Print the schedules; when one waits past its fire time for a driver, say so on stderr, and ``start`` (how to
    start one)."""
    found, driver = schedules.listing()
    if args.output == "json":
        output.print_json([schedule_json(s) for s in found])
    elif not found:
        print("no schedules (a workload file with a `schedule:` block creates one with `air run -f`)", file=sys.stderr)
    else:
        columns = ("NAME", "STATUS", "EXPRESSION", "TIME ZONE", "NEXT FIRE", "LAST FIRE")
        output.table(columns, [_row(s) for s in found], status_column=1)
    if driver is not None and driver.stalled:
        print(stalled_notice(driver.last_tick_ms, start), file=sys.stderr)
    return 0


def stalled_notice(last_tick_ms: int | None, start: str, now: int | None = None) -> str:
    """What `air schedules list` says when a schedule's next fire time has passed and no driver runs to fire it."""
    if last_tick_ms is None:
        since = "no driver has run yet"
    else:
        moment = datetime.fromtimestamp(last_tick_ms / 1000).astimezone()
        ago = duration(((now_ms() if now is None else now) - last_tick_ms) / 1000)
        since = f"no driver has fired since {moment:%Y-%m-%d %H:%M:%S} {moment.tzname()} ({ago} ago)"
    return f"note: {since}, so the schedules whose NEXT FIRE is past wait for one: {start}"


def _row(schedule: Schedule) -> list[str]:
    upcoming_at = schedule.next_fire_ms
    last = schedule.fires[0] if schedule.fires else None
    return [
        schedule.name,
        schedule.pause_status,
        schedule.expression,
        schedule.timezone,
        shown(upcoming_at, schedule.timezone) if upcoming_at else "-",
        f"{last.outcome} {last.job_run_id or ''}".strip() if last else "-",
    ]


def get(schedules: Schedules, args: argparse.Namespace) -> int:
    schedule = schedules.get(args.name)
    if args.output == "json":
        output.print_json(schedule_json(schedule))
        return 0
    zone = schedule.timezone
    output.fields(
        [
            ("Schedule", schedule.name),
            ("Status", schedule.pause_status + (" (the next fires count once resumed)" if schedule.paused else "")),
            ("Expression", f"{schedule.expression} ({zone})"),
            ("Next fires", ", ".join(shown(at, zone) for at in upcoming(schedule))),
            ("Catch-up", schedule.catchup),
            ("Max concurrent runs", str(schedule.max_concurrent_runs)),
            ("Command", schedule.workload.get("command", "-")),
            ("Source", schedule.source),
            ("User", schedule.user),
        ]
    )
    if schedule.fires:
        print()
        columns = ("SCHEDULED", "OUTCOME", "JOB RUN", "REASON")
        rows = [[_when(f, zone), f.outcome, f.job_run_id or "-", f.reason or "-"] for f in schedule.fires]
        output.table(columns, rows, status_column=1)
    return 0


def _when(fire: Fire, zone: str) -> str:
    return shown(fire.scheduled_ms, zone) + (" (run now)" if fire.manual else "")


def _changed(schedule: Schedule, args: argparse.Namespace, words: str) -> int:
    if args.output == "json":
        output.print_json(schedule_json(schedule))
    else:
        print(f"schedule {visible(schedule.name)} {words}")
    return 0


def pause(schedules: Schedules, args: argparse.Namespace) -> int:
    return _changed(schedules.pause(args.name), args, "PAUSED")


def resume(schedules: Schedules, args: argparse.Namespace) -> int:
    schedule = schedules.resume(args.name)
    when = shown(schedule.next_fire_ms, schedule.timezone) if schedule.next_fire_ms else "never (its expression ended)"
    return _changed(schedule, args, f"UNPAUSED, next fire {when}")


def delete(schedules: Schedules, args: argparse.Namespace) -> int:
    return _changed(schedules.delete(args.name), args, "deleted (jobs it started go on; `air cancel` stops them)")


def fire_now(schedules: Schedules, args: argparse.Namespace) -> int:
    try:
        fire = run_now(schedules.jobs, args.name)
    except Busy as err:
        raise CliError(str(err), err.kind) from None
    return report_fire(fire, args)


def report_fire(fire: Fire, args: argparse.Namespace) -> int:
    """Print the job a run-now started (exit 1 with the reason when none was)."""
    if args.output == "json":
        output.print_json(fire.to_json())
    elif fire.outcome == "SUBMITTED":
        print(fire.job_run_id)
    if fire.outcome != "SUBMITTED":
        raise CliError(f"the job of schedule {args.name} was not submitted: {fire.reason}", CONFLICT)
    return 0


def scheduler(jobs: Jobs, args: argparse.Namespace) -> int:
    """Tick until SIGTERM or Ctrl-C: each due fire is printed as one line."""
    if args.interval <= 0:
        raise CliError(f"--interval {args.interval}: expected a number of seconds > 0", BAD_INPUT)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    schedules, reaped = Schedules(jobs), 0.0
    print(f"air scheduler: firing the schedules under {jobs.home} (SIGTERM or Ctrl-C stops)", file=sys.stderr)
    while not stop.is_set():
        if time.monotonic() - reaped >= REAP_SECONDS:
            jobs.reap()  # a job whose supervisor died would count against max_concurrent_runs
            reaped = time.monotonic()
        for fire in tick(jobs):
            _say(fire, schedules)
        if args.once:
            break
        due = schedules.next_due_ms()
        wait = args.interval if due is None else min(args.interval, (due - now_ms()) / 1000)
        stop.wait(max(wait, 0.01))
    return 0


def _say(fire: Fire, schedules: Schedules) -> None:
    try:
        zone = schedules.get(fire.name, fires=0).timezone
    except ScheduleNotFound:  # deleted meanwhile
        zone = "UTC"
    detail = " ".join(filter(None, [fire.job_run_id, fire.reason]))
    print(visible(f"{shown(fire.scheduled_ms, zone)} {fire.name}: {fire.outcome} {detail}".rstrip()), flush=True)
