"""`air permissions JOB_OR_SCHEDULE`: list who may use a job or a schedule, or grant a user or group a level on it
(calls of ``workloads.surfaces.access``, formatted)."""

from __future__ import annotations

import argparse

from jupyter_air.error_kinds import BAD_INPUT
from jupyter_air.format import visible
from jupyter_air.tracking.sharing import ShareError
from jupyter_air.workloads.jobs.jobs import JobNotFound
from jupyter_air.workloads.schedules.schedules import ScheduleNotFound
from jupyter_air.workloads.state.permissions import LEVELS, BadGrant, Forbidden
from jupyter_air.workloads.surfaces.access import Access

from . import output
from .errors import CliError

#: What `air permissions` needs to grant, said when it is given half of it.
GRANT_USAGE = "give --user or --group with --level or --revoke to grant; neither to list"


def add_parser(sub, json_help: str) -> None:
    permissions = sub.add_parser(
        "permissions",
        help="list who may view, run or manage a job or schedule, or give a user or group a level on it",
        description="Without --user or --group: list the owner and the grants. A grant to a user also gives them "
        "the matching permission on the job's experiment when it is on your shared tracking server.",
    )
    permissions.add_argument("name", metavar="JOB_OR_SCHEDULE", help="a job run id (job-...) or a schedule's name")
    who = permissions.add_mutually_exclusive_group()
    who.add_argument("--user", help="the user to grant to")
    who.add_argument("--group", help="the group to grant to")
    how = permissions.add_mutually_exclusive_group()
    how.add_argument("--level", type=str.upper, choices=LEVELS[:3], help="the level to give (replaces theirs)")
    how.add_argument("--revoke", action="store_true", help="take their grant back")
    permissions.add_argument("-o", "--output", choices=["json"], help=json_help)


def permissions(jobs, args: argparse.Namespace) -> int:
    granting = args.user is not None or args.group is not None
    if granting != (args.level is not None or args.revoke):
        raise CliError(GRANT_USAGE, BAD_INPUT)
    access = Access(jobs)
    try:
        answer = access.grant(args.name, args.user, args.group, args.level) if granting else access.list(args.name)
    except BadGrant as err:
        raise CliError(f"{args.name}: {err}", err.kind) from None
    except ShareError as err:
        raise CliError(f"{args.name}: nothing changed: {err}", err.kind) from None
    except (JobNotFound, ScheduleNotFound, Forbidden) as err:
        hint = "; `air list --all-status` and `air schedules list` name them" if not isinstance(err, Forbidden) else ""
        raise CliError(f"{err}{hint}", err.kind) from None
    return show(answer, args)


def show(answer: dict, args: argparse.Namespace) -> int:
    """Print who may use a job or schedule (``Access.list``'s answer) as a table, or as JSON with ``-o json``."""
    if args.output == "json":
        output.print_json(answer, compact=True)
        return 0
    rows = [["user", answer["owner"], "IS_OWNER", "-", "-"]]
    rows += [_row(grant) for grant in answer["grants"]]
    inherited = answer["from_schedule"]
    rows += [_row(grant, f" (schedule {inherited['name']})") for grant in (inherited or {}).get("grants", [])]
    print(visible(f"{answer['kind']} {answer['name']} (your level: {answer['your_level'] or 'none'})"))
    output.table(("KIND", "NAME", "LEVEL", "GRANTED BY", "GRANTED"), rows)
    if "experiment_grant" in answer:
        print(visible(f"experiment grant: {answer['experiment_grant']}"))
    return 0


def _row(grant: dict, via: str = "") -> list[str]:
    kind = "user" if "user" in grant else "group"
    return [kind, grant[kind], grant["level"] + via, grant["granted_by"], output.clock(grant["granted_ms"])]
