"""`air queue`: this machine's GPU ledger as its users and admin see it: who holds which GPUs since when, and who
waits, in the order they will start, with each one's reason."""

from __future__ import annotations

import argparse
from typing import Protocol

from jupyter_air.format import visible

from . import output


def add_parser(sub, json_help: str) -> None:
    queue = sub.add_parser(
        "queue",
        help="who holds this machine's GPUs, and who waits for them in what order",
        description="The GPU ledger of AIR_HOME: jobs and notebook calls holding GPUs, then the waiting ones in the "
        "order they will start (fair share between users, first come first served within a user).",
    )
    queue.add_argument("-o", "--output", choices=["json"], help=json_help)


class Ledger(Protocol):
    """Where the queue is read: AIR_HOME's jobs, or the team's job service."""

    def gpu_queue(self) -> dict: ...


def queue_command(jobs: Ledger, args: argparse.Namespace) -> int:
    ledger = jobs.gpu_queue()
    if args.output == "json":
        output.print_json(ledger)
        return 0
    held = [
        [_gpus(c, ",".join(map(str, c["gpus"]))), c["user"], c["kind"], c["label"], output.clock(c["granted_ms"])]
        for c in ledger["held"]
    ]
    print("Holding GPUs" if held else "No work holds a GPU")
    if held:
        output.table(("GPUS", "USER", "KIND", "WHAT", "SINCE"), held)
    waiting = [
        [str(c["position"]), c["user"], c["kind"], c["label"], _gpus(c, str(c["count"]))]
        + [output.clock(c["submitted_ms"])]
        for c in ledger["queued"]
    ]
    print("\nWaiting, in the order they will start" if waiting else "\nNothing waits for a GPU")
    if waiting:
        output.table(("#", "USER", "KIND", "WHAT", "GPUS", "WAITING SINCE"), waiting)
    used = ", ".join(f"{visible(user)} {hours:.2f}" for user, hours in ledger["recent_gpu_hours"].items())
    print(f"\nGPU-hours in the last 24 h, which order the line: {used or 'none'}")
    if ledger["shared_gpus"]:
        print(f"Shared GPUs (any number of claims at once): {','.join(map(str, ledger['shared_gpus']))}")
    return 0


def _gpus(claim: dict, here: str) -> str:
    """This machine's GPUs as ``here`` says them; a Ray cluster's as a count of its pool (Ray places them)."""
    return f"{claim['count']} of {claim['pool']}" if claim.get("pool") else here
