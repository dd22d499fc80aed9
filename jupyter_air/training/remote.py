"""``.distributed(remote=True)``: a call submitted as a job that outlives its kernel, followed from the cell, and
``attach()`` to follow it again (or show a finished local call) from any kernel.

The job is an ``air`` job of kind ``call`` (:mod:`~jupyter_air.training.remote_runner` runs it): its supervisor is
a detached process of this machine, forked from AIR_HOME's zygote when one runs (no process imports torch for the
call, nor Ray for a call on Ray nodes, which takes the node actors the last remote call parked: :mod:`.parked`). The
cell shows the run card once the job's run
exists, the ranks' lines as they come, and returns the results by rank, or raises the call's DistributedError. An
interrupt stops following, never the job.
"""

from __future__ import annotations

import functools
import json
import os
import pickle
import time
from collections import OrderedDict

from jupyter_air.run_card.card import RunCard, card_mode, header_from_run
from jupyter_air.run_card.metrics import MetricReader
from jupyter_air.run_card.starting import StartingCard
from jupyter_air.run_card.state import CardState
from jupyter_air.tracking.entities import TrackingError
from jupyter_air.tracking.naming import GPUS_TAG, REMOTE_TAG, WORLD_SIZE_TAG
from jupyter_air.tracking.store import tracker
from jupyter_air.training import runs, zygote_client
from jupyter_air.training.cell import is_cell_result
from jupyter_air.training.errors import CallDetached, DistributedError
from jupyter_air.training.launch_plan import world_size_for
from jupyter_air.training.options import RunOptions
from jupyter_air.training.outcome_file import read_outcome
from jupyter_air.training.pickling import call_context, pack
from jupyter_air.training.remote_runner import CONTEXT, PAYLOAD
from jupyter_air.workloads.jobs.attempt_runs import job_of_run
from jupyter_air.workloads.jobs.jobs import JobNotFound, Jobs
from jupyter_air.workloads.state.kept_results import RESULTS
from jupyter_air.workloads.state.logs import LogCursor

#: Seconds between two looks at the job while following it: the first soon (a short call ends within a second), each
#: next one a half longer, up to the last.
_POLL_SECONDS = (0.02, 0.2)
#: Finished local calls of this kernel that ``attach`` can show again, by run id (the newest last).
_RECENT: OrderedDict[str, tuple[dict, list | None, BaseException | None]] = OrderedDict()
_RECENT_CALLS = 20
_JOB_STATUS = {"SUCCEEDED": "FINISHED", "FAILED": "FAILED", "TIMED_OUT": "FAILED", "CANCELED": "KILLED"}


def submit(function, args: tuple, kwargs: dict, options: RunOptions, tags: dict, params: dict) -> str:
    """Submit the call as a job; its job run id. Fails before anything exists if the call cannot travel."""
    payload = pack(function, args, kwargs)
    call = {"options": {k: v for k, v in vars(options).items() if k not in ("experiment", "run_name", "remote")}}
    if options.nodes > 1 or options.ray_address:
        compute = {"num_nodes": options.nodes, "num_accelerators": (options.gpus or 0) * options.nodes}
        compute["ray_address"] = options.ray_address
    else:
        world_size, gpus = world_size_for(options.gpus)
        tags = {**tags, GPUS_TAG: str(gpus), WORLD_SIZE_TAG: str(world_size)}
        compute, call["world_size"] = {"num_accelerators": gpus}, world_size
    path = runs.notebook_path()
    source = path or runs.script_name()
    workload = {
        "kind": "call",
        "command": f"{tags['air.function']}(...) from {source}",  # what `air list` and the panel show
        "experiment_name": runs.experiment_name(options.experiment),
        "mlflow_run_name": options.run_name,
        "mlflow_artifact_location": None,
        "compute": compute,
        "max_retries": 0,
        "retry_delay_seconds": 0,
        "timeout_minutes": options.timeout / 60 if options.timeout else None,
        "parameters": params,
        "env_variables": {},
        "code_source": {"root_path": os.getcwd()},
        "tags": {**runs.source_tags(), **tags, REMOTE_TAG: "true"},
        "call": call,
    }
    files = {PAYLOAD: payload, CONTEXT: json.dumps(call_context()).encode()}
    warm = functools.partial(zygote_client.supervisor, ray="ray_address" in compute)
    return Jobs().submit(workload, source=source, files=files, warm=warm).job_run_id


def follow(job_run_id: str, starting: StartingCard | None = None) -> list:
    """Show the job's card until it ends; each rank's result, or its DistributedError. An interrupt detaches."""
    jobs = Jobs()
    starting = starting or StartingCard(card_mode())
    card, readers = None, {}
    poll = _POLL_SECONDS[0]
    try:
        while True:
            job = jobs.get(job_run_id)
            attempt = job.attempts[-1] if job.attempts else None
            if card is None and attempt is not None and attempt.mlflow_run_id:
                card = _card(job, attempt.mlflow_run_id, starting)
            if card is None:
                starting.waiting(f"job {job_run_id} {job.status.lower()}: {job.error or 'its supervisor starts'}")
            if card is not None:
                card.add_lines(_new_lines(jobs, job, attempt.attempt, readers))
            if not job.active:
                break
            time.sleep(poll)
            poll = min(poll * 1.5, _POLL_SECONDS[1])
    except KeyboardInterrupt:
        if card is not None:
            card.detach()
        else:
            starting.waiting(f"detached from job {job_run_id}: it keeps running")
        raise CallDetached(job_run_id) from None
    if card is None:  # ended before its run existed (canceled while pending, refused by the cluster)
        starting.waiting(f"job {job_run_id} {job.status.lower()}: {job.error or ''}".rstrip(": "))
        raise DistributedError(f"job {job_run_id} ended {job.status} before its run started: {job.error}")
    card.add_lines(_new_lines(jobs, job, attempt.attempt, readers, final=True))
    results, exc = _outcome(jobs, job)
    card.finish(_JOB_STATUS.get(job.status, "FAILED"), exc, _ended_ms(job, attempt.mlflow_run_id))
    if exc is not None:
        raise exc
    return results


def attach(run_or_job_id: str) -> list | dict:
    """Follow a remote call again until it ends (its job run id ``job-...``, from any kernel), or show again a call
    of this kernel (its MLflow run id): its card, then each rank's result, or the call's ``DistributedError``.

    For an ``%%air_distributed --remote`` cell, the names the cell assigned on rank 0 (``{name: value}``), as the
    magic takes them into the notebook."""
    results = follow_again(run_or_job_id)
    if results and is_cell_result(results[0]):
        return results[0]["values"]
    return results


def follow_again(run_or_job_id: str) -> list:
    """:func:`attach`'s card and results by rank as the ranks returned them."""
    if run_or_job_id in _RECENT:
        data, results, exc = _RECENT[run_or_job_id]
        RunCard.show_snapshot(data, card_mode())
        if exc is not None:
            raise exc
        return results
    jobs = Jobs()
    try:
        return follow(jobs.get(run_or_job_id).job_run_id)
    except JobNotFound:
        job_run_id = job_of_run(run_or_job_id)
        if job_run_id is None:
            raise JobNotFound(
                f"{run_or_job_id!r} is neither a job run of AIR_HOME {jobs.home} nor a call of this kernel: pass the "
                "job run id a remote call printed (job-...), or the MLflow run id of a call made in this kernel"
            ) from None
        return follow(job_run_id)


def remember(run_id: str, card: RunCard | None, results: list | None, exc: BaseException | None) -> None:
    """Keep a finished local call of this kernel for :func:`attach` (its final card, its results or error)."""
    _RECENT[run_id] = (card.snapshot() if card is not None else {}, results, exc)
    while len(_RECENT) > _RECENT_CALLS:
        _RECENT.popitem(last=False)


def _card(job, run_id: str, starting: StartingCard) -> RunCard | None:
    """The run card of the job's run once the run says where its ranks run (None until then)."""

    tracking = tracker(job.tracking_uri)
    run = tracking.get_run(run_id)
    tags = dict(run.data.tags)
    if WORLD_SIZE_TAG not in tags:  # a cluster call says it once its nodes are placed
        return None
    world_size, gpus = int(tags[WORLD_SIZE_TAG]), int(tags.get(GPUS_TAG, 0))
    header = header_from_run(
        tracking, run.info, world_size=world_size, gpus=gpus, nodes=job.num_nodes, job_run_id=job.job_run_id
    )
    state = CardState(header, started_ms=run.info.start_time)  # the run's own start, also when attached later
    card = RunCard(state, MetricReader(tracking, run_id), card_mode(), stoppable=True)
    card.show(starting.handle)
    return card


def _ended_ms(job, run_id: str) -> int | None:
    """When the job's run ended, as its store says (None: not known; the card then ends now)."""

    try:
        return tracker(job.tracking_uri).get_run(run_id).info.end_time
    except TrackingError:
        return None


def _new_lines(jobs, job, attempt: int, readers: dict, final: bool = False) -> list[tuple[int, str]]:
    """The ranks' new ``(rank, line)`` output, from the job's per-node logs (``[rank N] ...`` lines)."""
    lines = []
    for node in range(job.num_nodes):
        reader = readers.setdefault(node, LogCursor(jobs.log_dir(job, attempt, node)))
        for entry in reader.read(final=final):
            prefix, _, text = entry.line.partition("] ")
            if prefix.startswith("[rank ") and prefix[6:].isdigit():
                lines.append((int(prefix[6:]), text))
    return lines


def _outcome(jobs, job) -> tuple[list | None, DistributedError | None]:
    """The results by rank, or the error, that the job's last attempt left."""
    import cloudpickle

    folder = jobs.home / "jobs" / job.job_run_id
    outcome = read_outcome(folder)
    if outcome is None:
        return None, DistributedError(f"job {job.job_run_id} ended {job.status}: {job.error or 'no result'}")
    if outcome["status"] != "ok":
        fields = ("rank", "node", "exitcode", "exception_type", "exception_message", "worker_traceback")
        failures = {int(rank): text for rank, text in outcome.get("failures", {}).items()}
        return None, DistributedError(outcome["message"], failures=failures, **{k: outcome.get(k) for k in fields})
    try:
        kept = [folder / RESULTS / f"rank_{rank}.pkl" for rank in range(outcome["ranks"])]
        results = [cloudpickle.loads(path.read_bytes()) for path in kept]
    except (FileNotFoundError, pickle.UnpicklingError) as exc:
        return None, DistributedError(f"the results of job {job.job_run_id} are gone ({exc}): they are kept 7 days")
    return results, None
