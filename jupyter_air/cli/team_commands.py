"""`air run`, `list`, `get`, `logs`, `cancel`, `permissions`, `schedules` and `queue` against the team's job service
(``AIR_JOBS_URL`` set, as a hub's spawner sets it in users' servers, and ``JUPYTERHUB_API_TOKEN``): the same commands
and output as on the user's own AIR_HOME, answered as their hub user; the service fires the schedules (`air
scheduler` says so). ``share`` stays the user's."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from jupyter_air.error_kinds import BAD_INPUT
from jupyter_air.format import visible
from jupyter_air.workloads.file.limits import read_limited
from jupyter_air.workloads.jobs.shapes import job_from_json
from jupyter_air.workloads.schedules.driver_ticks import Driver
from jupyter_air.workloads.schedules.schedules import schedule_from_json
from jupyter_air.workloads.state.logs import LogLine
from jupyter_air.workloads.state.records import Fire, Job, Schedule
from jupyter_air.workloads.surfaces.jobs_view import MAX_LIMIT
from jupyter_air.workloads.surfaces.team_jobs import ServiceAnswer, ServiceJobs

from . import commands, output, queue_commands, schedule_commands
from .errors import CliError
from .follow import emit
from .permission_commands import GRANT_USAGE, show

#: The commands the team's job service answers.
COMMANDS = ("run", "list", "get", "logs", "cancel", "permissions", "schedules", "scheduler", "queue")
#: What fires the schedules kept by the team's job service.
_FIRED_BY = "the team's job service fires it"
#: How the schedules of the team's job service get a driver again.
_DRIVEN_BY = "the team's job service fires them; ask its administrator whether it runs"
#: Seconds between two reads of a followed log.
_FOLLOW_SECONDS = 1.0


class TeamJobs:
    """The service's jobs as records, for the commands that print them as they print the user's own."""

    def __init__(self, service: ServiceJobs):
        self.service = service

    def get(self, job_run_id: str) -> Job:
        return job_from_json(self.service.get(job_run_id))

    def list(self, active_only: bool = True, limit: int = 50, **equal: str) -> list[Job]:
        found = [job_from_json(j) for j in self.service.list(MAX_LIMIT, equal.get("schedule"))["jobs"]]
        kept = [j for j in found if (j.active or not active_only) and all(getattr(j, k) == v for k, v in equal.items())]
        return kept[:limit]

    def cancel(self, job_run_id: str) -> Job:
        return job_from_json(self.service.cancel(job_run_id))

    def gpu_queue(self) -> dict:
        return self.service.gpu_queue()


class TeamSchedules:
    """The service's schedules as records, for the `air schedules` commands that print the user's own."""

    def __init__(self, service: ServiceJobs):
        self.service = service.schedules

    def list(self) -> list[Schedule]:
        return self.listing()[0]

    def listing(self) -> tuple[list[Schedule], Driver | None]:
        answer = self.service.list()
        return [schedule_from_json(s) for s in answer["schedules"]], Driver.from_json(answer.get("driver"))

    def get(self, name: str) -> Schedule:
        return schedule_from_json(self.service.get(name))

    def pause(self, name: str) -> Schedule:
        return schedule_from_json(self.service.pause(name))

    def resume(self, name: str) -> Schedule:
        return schedule_from_json(self.service.resume(name))

    def delete(self, name: str) -> Schedule:
        return schedule_from_json(self.service.delete(name))


def dispatch(service: ServiceJobs, args: argparse.Namespace) -> int:
    """Run one of :data:`COMMANDS` against the service; its refusals exit 2 (bad input) or 1, in its words."""
    jobs = TeamJobs(service)
    try:
        if args.command == "run":
            return _run(service, args)
        if args.command in ("schedules", "scheduler"):
            _refuse(args.command == "scheduler", "air scheduler", "the service fires the team's schedules")
            return _schedules(service, args)
        if args.command == "list":
            return commands.list_jobs(jobs, args)
        if args.command == "get":
            if args.output == "json":
                output.print_json(service.get(args.job_run_id))
                return 0
            return commands.show(jobs.get(args.job_run_id), "the team's job service")
        if args.command == "logs":
            return _logs(service, args)
        if args.command == "cancel":
            return commands.cancel_jobs(jobs, args)
        if args.command == "queue":
            return queue_commands.queue_command(jobs, args)
        if (granting := args.user is not None or args.group is not None) != (args.level is not None or args.revoke):
            raise CliError(GRANT_USAGE, BAD_INPUT)
        granted = granting and service.grant(args.name, args.user, args.group, args.level)
        return show(granted or service.permissions(args.name), args)
    except ServiceAnswer as err:
        raise CliError(str(err), err.kind) from None


def _refuse(given: object, flag: str, why: str) -> None:
    if given:
        raise CliError(f"{flag}: not with the team's job service (AIR_JOBS_URL): {why}", BAD_INPUT)


def _run(service: ServiceJobs, args: argparse.Namespace) -> int:
    _refuse(args.dry_run, "--dry-run", "the service validates when you submit")
    _refuse(args.ray_address, "--ray-address", "the service chooses where its jobs run")
    path = Path(args.file).resolve()
    if not path.is_file():
        raise CliError(f"{args.file}: no such file", BAD_INPUT)
    if args.watch and _scheduled(path):
        raise CliError("--watch follows a job, and a schedule starts none now; drop --watch", BAD_INPUT)
    answer = service.send(path, args.file, args.override)
    if "schedule" in answer:
        return schedule_commands.announce(schedule_from_json(answer["schedule"]), answer["created"], args, _FIRED_BY)
    job = job_from_json(answer)
    commands.announce(job, args)
    return _watch(service, job.job_run_id, args.output == "json") if args.watch else 0


def _watch(service: ServiceJobs, job_run_id: str, json_lines: bool) -> int:
    """Print node 0's output of every attempt in turn until the job has ended (an attempt's log is complete before
    its job records the outcome); 0 when it SUCCEEDED, 1 otherwise."""
    attempt = 0
    while (job := TeamJobs(service).get(job_run_id)).active or any(a.attempt >= attempt for a in job.attempts):
        if not any(a.attempt >= attempt for a in job.attempts):
            time.sleep(_FOLLOW_SECONDS)
            continue
        if attempt > 0:
            previous = next(a for a in job.attempts if a.attempt == attempt - 1)
            why = f"{previous.status}: {previous.error}"
            print(visible(f"attempt {previous.attempt} {why}; retry {attempt}"), file=sys.stderr)
        _follow(service, job_run_id, attempt, 0, None, json_lines)
        attempt += 1
    print(visible(f"{job.job_run_id} {job.status}" + (f": {job.error}" if job.error else "")), file=sys.stderr)
    return 0 if job.status == "SUCCEEDED" else 1


def _scheduled(path: Path) -> bool:
    """Whether the workload file has a ``schedule:`` (the service checks the rest)."""
    import yaml

    try:
        text = read_limited(path)[0]  # None when too big: the service refuses it
        data = yaml.safe_load(text) if text is not None else None
    except (yaml.YAMLError, UnicodeDecodeError, OSError, RecursionError):
        return False
    return isinstance(data, dict) and "schedule" in data


def _schedules(service: ServiceJobs, args: argparse.Namespace) -> int:
    schedules = TeamSchedules(service)
    if args.action == "list":
        return schedule_commands.list_schedules(schedules, args, _DRIVEN_BY)
    if args.action == "run-now":
        fire = service.schedules.run_now(args.name)["fire"]
        return schedule_commands.report_fire(Fire(args.name, **fire), args)
    actions = {"get": schedule_commands.get, "pause": schedule_commands.pause, "resume": schedule_commands.resume}
    return {**actions, "delete": schedule_commands.delete}[args.action](schedules, args)


def _logs(service: ServiceJobs, args: argparse.Namespace) -> int:
    _refuse(args.download_to, "--download-to", "download the log from the Logs view, or print it here")
    attempt = -1 if args.retry is None else args.retry
    return _follow(service, args.job_run_id, attempt, args.node or 0, args.tail, args.output == "json", args.follow)


def _follow(service, job_run_id, attempt, node, tail, json_lines, follow: bool = True) -> int:
    """Print the log of ``node`` of ``attempt`` (-1: the latest) as it is now; with ``follow``, wait for the attempt
    to start and print what it writes until it has ended."""
    while follow and not (job := TeamJobs(service).get(job_run_id)).attempts:
        if not job.active:
            print(f"{job_run_id} ended ({job.status}) before any attempt started: {job.error}", file=sys.stderr)
            return 1
        time.sleep(_FOLLOW_SECONDS)
    pages = list(service.log_pages(job_run_id, attempt, node))
    page, lines = pages[-1], "".join(p["text"] for p in pages).splitlines()
    emit(_lines(lines[-tail:] if tail else [] if tail == 0 else lines), node, page["attempt"], json_lines)
    while follow and not page["complete"]:
        time.sleep(_FOLLOW_SECONDS)
        page = service.logs(job_run_id, page["attempt"], node, page["next_offset"])
        emit(_lines(page["text"].splitlines()), node, page["attempt"], json_lines)
    return 0


def _lines(lines: list[str]) -> list[LogLine]:
    return [LogLine(None, line) for line in lines]
