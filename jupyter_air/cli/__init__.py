"""The `air` command (also `jupyter air`): run, list, get, logs and cancel workloads; schedule them; share
experiments and jobs."""

from __future__ import annotations

import argparse
import json
import os
import sys

from jupyter_air.error_kinds import BROKEN_PIPE, INTERRUPTED, kind_of
from jupyter_air.format import visible
from jupyter_air.workloads.surfaces.team_jobs import ServiceJobs

from . import commands, team_commands
from .parser import build_parser


def main(argv: list[str] | None = None) -> int:
    """Run the `air` command line; returns the exit status (2 for invalid input)."""
    args = build_parser().parse_args(argv)
    try:
        if (service := ServiceJobs.from_environment()) is not None and args.command in team_commands.COMMANDS:
            return team_commands.dispatch(service, args)
        return commands.dispatch(args)
    except KeyboardInterrupt:
        print("\ninterrupted (a submitted job keeps running; `air cancel` stops it)", file=sys.stderr)
        return INTERRUPTED
    except BrokenPipeError:
        # The reader went away (e.g. `air logs ... | head`): stop quietly, as other command-line tools do.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return BROKEN_PIPE
    except Exception as err:  # an error of a known kind (an unusable AIR_HOME, a full disk): one line, no traceback
        if (kind := kind_of(err)) is None:
            raise
        return _fail(args, str(err), kind.exit_status)


def _fail(args: argparse.Namespace, message: str, code: int) -> int:
    """Say what went wrong on stderr (and, with ``-o json``, as ``{"error", "exit_code"}`` on stdout)."""
    print(f"air {args.command}: error: {visible(message, keep=chr(10))}", file=sys.stderr)
    if getattr(args, "output", None) == "json":
        print(json.dumps({"error": message, "exit_code": code}), flush=True)
    return code
