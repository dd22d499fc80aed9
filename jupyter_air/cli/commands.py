"""The `air` subcommands: each turns parsed arguments into calls of the one job path (``workloads.jobs``) and
formats what it returns."""

from __future__ import annotations

import argparse
import contextlib
import difflib
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from jupyter_air.error_kinds import BAD_INPUT, CONFLICT, NOT_FOUND
from jupyter_air.format import duration, visible
from jupyter_air.tracking.links import links
from jupyter_air.tracking.sharing import ShareError
from jupyter_air.tracking.sharing import share as grant
from jupyter_air.workloads.jobs.jobs import JobNotFound, Jobs, SubmitError
from jupyter_air.workloads.jobs.shapes import job_detail, job_summary
from jupyter_air.workloads.state.logs import UnsafePath, download, tail
from jupyter_air.workloads.state.records import ACTIVE, TERMINAL, Job

from . import output, schedule_commands
from .errors import CliError
from .follow import emit, follow_attempt, latest_attempt, watch
from .permission_commands import permissions
from .queue_commands import queue_command
from .usage_commands import usage_command

_FILTERS = {"status": "status", "experiment": "experiment_name", "user": "user", "executor": "executor"}


def dispatch(args: argparse.Namespace) -> int:
    """Run the command against the user's own AIR_HOME (``share``: against their MLflow)."""
    if args.command == "run":
        return run(args)
    if args.command == "share":
        return share(args)
    if args.command == "usage":
        return usage_command(args)
    jobs = Jobs()
    jobs.create()
    jobs.reap()
    if args.command in ("schedules", "scheduler"):
        return schedule_commands.dispatch(jobs, args)
    if args.command == "permissions":
        return permissions(jobs, args)
    handler = {"list": list_jobs, "get": get, "logs": logs, "cancel": cancel_jobs, "queue": queue_command}[args.command]
    return handler(jobs, args)


def _job(jobs: Jobs, job_run_id: str) -> Job:
    try:
        return jobs.get(job_run_id)
    except JobNotFound:
        hint = "`air list --all-status` lists them"
        with contextlib.suppress(JobNotFound):
            if not job_run_id.startswith("job-"):  # the hex part alone, typed by hand
                hint = f"did you mean {jobs.get('job-' + job_run_id).job_run_id!r}?"
        raise CliError(f"no job run {job_run_id!r} in {jobs.store.path}; {hint}", NOT_FOUND) from None


def run(args: argparse.Namespace) -> int:
    jobs = Jobs()
    try:
        resolved = jobs.resolve_file(args.file, tuple(args.override), args.ray_address)
    except SubmitError as err:
        raise CliError(str(err), err.kind) from None
    for note in resolved.notes:
        print(f"note: {note}", file=sys.stderr)
    if args.dry_run:
        if args.output == "json":
            output.print_json({"dry_run": True, "workload": resolved.workload})
        else:
            import yaml

            print(yaml.safe_dump(resolved.workload, sort_keys=False).rstrip())
        return 0
    if "schedule" in resolved.workload:
        return schedule_commands.create(jobs, resolved, args)
    jobs.reap()
    try:
        job = jobs.start(resolved)
    except SubmitError as err:
        raise CliError(str(err), err.kind) from None
    announce(job, args)
    if args.watch:
        return watch(jobs.store, job, json_lines=args.output == "json")
    return 0


def announce(job: Job, args: argparse.Namespace) -> None:
    """Say which job `air run` started: its id (and how to follow it), or its summary with ``-o json``."""
    if args.output == "json":
        output.print_json(job_summary(job), compact=True)
    else:
        print(job.job_run_id, flush=True)
        if not args.watch:
            print(f"follow it with: air logs {job.job_run_id} --follow", file=sys.stderr)


def list_jobs(jobs: Jobs, args: argparse.Namespace) -> int:
    equal = {}
    for item in args.filter:
        key, sep, value = item.partition("=")
        if not sep or key not in _FILTERS:
            close = difflib.get_close_matches(key, list(_FILTERS), n=1)
            hint = f"did you mean '{close[0]}'? " if close else ""
            raise CliError(f"--filter {item!r}: {hint}use KEY=VALUE with KEY one of {', '.join(_FILTERS)}", BAD_INPUT)
        if key == "status":
            value = value.upper()
            if value not in ACTIVE + TERMINAL:
                raise CliError(f"--filter {item!r}: status is one of {', '.join(ACTIVE + TERMINAL)}", BAD_INPUT)
        equal[_FILTERS[key]] = value
    if args.schedule:
        equal["schedule"] = args.schedule
    found = jobs.list(active_only=not args.all_status and "status" not in equal, limit=args.limit, **equal)
    if args.output == "json":
        output.print_json([job_summary(j) for j in found])
        return 0
    if not found:
        scope = "job runs match" if equal or args.all_status else "active job runs (--all-status shows ended ones)"
        print(f"no {scope}", file=sys.stderr)
        return 0
    output.table(output.LIST_COLUMNS, [output.list_row(j) for j in found], status_column=2)
    for job in found:  # what a pending job waits for, and who holds it (on stderr: the table stays parsable)
        if job.status == "PENDING" and job.error:
            print(f"{job.job_run_id}: {visible(job.error)}", file=sys.stderr)
    return 0


def _fresh_links(job: Job) -> str | None:
    """Give each attempt the link that opens its run now (the server may have moved since it started);
    returns where the links come from."""
    origin = None
    for attempt in job.attempts:
        if attempt.mlflow_run_id and job.experiment_id:
            found = links(job.experiment_id, attempt.mlflow_run_id, for_page=False, uri=job.tracking_uri)
            attempt.mlflow_run_url, origin = found.run, found.origin or origin
    return origin


def get(jobs: Jobs, args: argparse.Namespace) -> int:
    job = _job(jobs, args.job_run_id)
    origin = _fresh_links(job)
    if args.output == "json":
        output.print_json(job_detail(job))
        return 0
    return show(job, origin)


def show(job: Job, origin: str | None) -> int:
    """Print a job run as `air get` does (``origin``: where its MLflow links come from)."""
    spec = job.workload
    output.fields(
        [
            ("Job run", job.job_run_id),
            ("Status", job.status),
            ("Experiment", f"{job.experiment_name} (id {job.experiment_id or 'not created yet'})"),
            ("Submitted", output.clock(job.submitted_ms)),
            ("Started", output.clock(job.started_ms)),
            ("Duration", duration(job.duration_seconds)),
            ("Attempts", f"{len(job.attempts)} (max retries {job.max_retries})"),
            ("User", job.user),
            ("GPUs", output.gpus(job)),
            ("Nodes", output.nodes(job)),
            ("Ray job", output.ray_job(job)),
            ("Exit code", "-" if job.exit_code is None else str(job.exit_code)),
            ("Waiting" if job.status == "PENDING" and job.error else "Error", job.error or "-"),
            ("Command", spec.get("command") or f"({spec.get('kind', 'command')})"),
            ("Working directory", spec.get("code_source", {}).get("root_path", "-")),
            ("Artifact location", spec.get("mlflow_artifact_location") or "the store's default"),
            ("Source", job.source),
            ("MLflow links", f"from {origin}" if origin else "none: no MLflow UI serving this store is known"),
        ]
    )
    if job.attempts:
        print()
        columns = ("ATTEMPT", "STATUS", "STARTED", "DURATION", "EXIT CODE", "MLFLOW RUN", "URL")
        rows = [
            [
                str(a.attempt),
                a.status,
                output.clock(a.started_ms),
                duration(((a.ended_ms or time.time() * 1000) - a.started_ms) / 1000),
                "-" if a.exit_code is None else str(a.exit_code),
                a.mlflow_run_id or "-",
                a.mlflow_run_url or "-",
            ]
            for a in job.attempts
        ]
        output.table(columns, rows, status_column=1)
    placed = job.attempts[-1].node_list if job.attempts else []
    if placed:
        print()
        columns = ("NODE", "HOSTNAME", "IP", "RAY NODE", "EXIT CODE")
        rows = [
            [
                str(n["node"]),
                n["hostname"],
                n["ip"],
                n["ray_node_id"],
                "-" if n["exit_code"] is None else str(n["exit_code"]),
            ]
            for n in placed
        ]
        output.table(columns, rows)
    return 0


def logs(jobs: Jobs, args: argparse.Namespace) -> int:
    job = _job(jobs, args.job_run_id)
    if args.node is not None and args.node >= job.num_nodes:
        if job.num_nodes == 1:
            raise CliError(f"--node {args.node} is out of range: {job.job_run_id} runs on 1 node (node 0)", BAD_INPUT)
        count = job.num_nodes
        raise CliError(f"--node {args.node} is out of range: the run has {count} node(s) (0 to {count - 1})", BAD_INPUT)
    if args.retry is not None and args.retry > job.max_retries:
        raise CliError(
            f"--retry {args.retry} is out of range: {job.job_run_id} has attempts 0 to {job.max_retries}"
            f" (max_retries {job.max_retries})",
            BAD_INPUT,
        )
    if args.download_to and (args.follow or args.tail is not None):
        raise CliError("--download-to writes the whole file; drop --follow and --tail", BAD_INPUT)
    json_lines = args.output == "json"
    node = args.node or 0
    if args.follow:
        return follow_attempt(jobs.store, job, args.retry, node, args.tail, json_lines)
    attempt = latest_attempt(job) if args.retry is None else args.retry
    started = {a.attempt for a in job.attempts}
    if attempt is None or attempt not in started:
        which = "no attempt" if attempt is None else f"attempt {attempt} has not"
        raise CliError(f"{which} started yet ({job.job_run_id} is {job.status}); add --follow to wait for it", CONFLICT)
    if args.download_to:
        nodes = range(job.num_nodes) if args.node is None else [args.node]
        for index in nodes:
            try:
                parts = (job.job_run_id, f"attempt_{attempt}", f"node_{index}")
                path = download(jobs.log_dir(job, attempt, index), Path(args.download_to), parts)
            except (UnsafePath, OSError) as err:
                raise CliError(f"--download-to {args.download_to}: {err}", BAD_INPUT) from None
            if json_lines:
                output.print_json(
                    {"job_run_id": job.job_run_id, "attempt": attempt, "node": index, "path": str(path)}, True
                )
            else:
                print(path)
        return 0
    emit(tail(jobs.log_dir(job, attempt, node), args.tail), node, attempt, json_lines)
    return 0


def cancel_jobs(jobs: Jobs, args: argparse.Namespace) -> int:
    if args.all == bool(args.job_run_ids):
        raise CliError("name the job runs to cancel, or pass --all (not both)", BAD_INPUT)
    named = jobs.list(active_only=True, limit=1_000_000) if args.all else [_job(jobs, i) for i in args.job_run_ids]
    active = [j.job_run_id for j in named if j.active]
    with ThreadPoolExecutor(max_workers=max(1, min(8, len(active)))) as pool:
        done = dict(zip(active, pool.map(jobs.cancel, active), strict=True))
    results = [done.get(j.job_run_id, j) for j in named]
    if args.output == "json":
        output.print_json([job_summary(j) for j in results])
        return 0
    if not results:
        print("no active job runs to cancel", file=sys.stderr)
    for before, after in zip(named, results, strict=True):
        note = after.status if before.active else f"not canceled: already {before.status}"
        print(f"{after.job_run_id}  {note}")
    return 0


def share(args: argparse.Namespace) -> int:
    """Grant a user a level on an experiment of the tracking server (no job store is opened)."""
    import dataclasses

    try:
        done = grant(args.experiment, args.user, args.level)
    except ShareError as err:
        raise CliError(str(err), err.kind) from None
    if args.output == "json":
        output.print_json(dataclasses.asdict(done), compact=True)
    else:
        print(done.describe())
    return 0
