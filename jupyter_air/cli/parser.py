"""The `air` command's arguments: every command, its options and their help (the CLI reference is generated from
it)."""

from __future__ import annotations

import argparse

from jupyter_air.tracking.sharing import LEVELS

from . import queue_commands, usage_commands
from .permission_commands import add_parser
from .schedule_commands import add_parsers

EPILOG = """examples:
  air run -f workload.yaml --watch
  air run -f workload.yaml --override max_retries=2 --override compute.num_accelerators=0
  air list --all-status --filter experiment=my-training -o json
  air logs JOB_RUN_ID --follow
  air run -f workload.yaml --override compute.num_nodes=2 --ray-address auto
  air logs JOB_RUN_ID --node 1
  air cancel JOB_RUN_ID
  air schedules list
  air list --schedule nightly-train --all-status
  air share /Shared/vision/resnet --user bob --level READ
  air permissions JOB_RUN_ID --user bob --level CAN_VIEW
  air usage --by day --since 30d
  air queue
"""


def _integer(text: str, minimum: int) -> int:
    try:
        value = int(text)
    except ValueError:
        value = None
    if value is None or value < minimum:
        raise argparse.ArgumentTypeError(f"expected a whole number >= {minimum}, got {text!r}")
    return value


def _non_negative(text: str) -> int:
    return _integer(text, 0)


def _positive(text: str) -> int:
    return _integer(text, 1)


def _repeatable(parser: argparse.ArgumentParser, flag: str, metavar: str, help: str) -> None:
    parser.add_argument(flag, action="append", default=[], metavar=metavar, help=help)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="air",
        description="Run training workloads described in YAML; every attempt is an MLflow run.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    json_help = "output format: 'json' prints the documented, stable JSON shape"

    run = sub.add_parser("run", help="validate a workload YAML and start it detached (or record its schedule)")
    run.add_argument("-f", "--file", required=True, help="workload YAML file")
    run.add_argument("--watch", action="store_true", help="stream node 0's output until the job ends")
    run.add_argument("--dry-run", action="store_true", help="print the resolved workload; start nothing")
    run.add_argument(
        "--ray-address",
        metavar="ADDRESS",
        help="run on this Ray cluster ('auto' on one of its nodes, host:6379 or ray://host:10001); "
        "default: compute.ray_address, then $AIR_RAY_ADDRESS for multi-node workloads",
    )
    _repeatable(
        run,
        "--override",
        "FIELD.PATH=VALUE",
        "set a field, e.g. compute.num_accelerators=0 (repeatable; VALUE is YAML)",
    )
    run.add_argument("-o", "--output", choices=["json"], help=json_help)

    ls = sub.add_parser("list", help="list job runs (active ones unless --all-status)")
    ls.add_argument("--all-status", action="store_true", help="include ended job runs")
    ls.add_argument("--limit", type=_positive, default=50, help="at most N job runs, newest first (default 50)")
    _repeatable(
        ls,
        "--filter",
        "KEY=VALUE",
        "keep job runs whose status, experiment, user or executor equals VALUE (repeatable)",
    )
    ls.add_argument("--schedule", metavar="NAME", help="only the job runs fired by schedule NAME")
    ls.add_argument("-o", "--output", choices=["json"], help=json_help)

    get = sub.add_parser("get", help="configuration and state of one job run")
    get.add_argument("job_run_id", metavar="JOB_RUN_ID")
    get.add_argument("-o", "--output", choices=["json"], help=json_help)

    logs = sub.add_parser("logs", help="output of one node of one attempt")
    logs.add_argument("job_run_id", metavar="JOB_RUN_ID")
    logs.add_argument("--node", type=_non_negative, help="node index (default 0; --download-to: every node)")
    logs.add_argument("--retry", type=_non_negative, metavar="N", help="attempt N, 0 being the first (default: latest)")
    logs.add_argument("--tail", type=_non_negative, metavar="N", help="only the last N lines")
    logs.add_argument("--follow", action="store_true", help="keep streaming until the attempt ends")
    logs.add_argument("--download-to", metavar="DIR", help="write the output file under DIR instead of printing")
    logs.add_argument("-o", "--output", choices=["json"], help="json: one {ts, node, attempt, line} object per line")

    cancel = sub.add_parser("cancel", help="stop job runs; they end CANCELED")
    cancel.add_argument("job_run_ids", nargs="*", metavar="JOB_RUN_ID")
    cancel.add_argument("--all", action="store_true", help="cancel every active job run")
    cancel.add_argument("-o", "--output", choices=["json"], help=json_help)

    share = sub.add_parser(
        "share",
        help="give a user READ, EDIT or MANAGE on an experiment of a tracking server that runs MLflow's "
        "authentication app, or take it back",
    )
    share.add_argument("experiment", metavar="EXPERIMENT", help="the experiment's name, e.g. /Shared/vision/resnet")
    share.add_argument("--user", required=True, help="the MLflow user name")
    how = share.add_mutually_exclusive_group(required=True)
    how.add_argument("--level", choices=LEVELS, type=str.upper, help="the permission to give (replaces theirs)")
    how.add_argument("--revoke", action="store_true", help="take their grant back")
    share.add_argument("-o", "--output", choices=["json"], help=json_help)

    add_parsers(sub, json_help)
    add_parser(sub, json_help)
    usage_commands.add_parser(sub, json_help)
    queue_commands.add_parser(sub, json_help)
    return parser
