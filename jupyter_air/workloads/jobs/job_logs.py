"""A job's logs as its readers ask for them: which attempt and node a request means, and that node's log read as a
bounded page of whole lines."""

from __future__ import annotations

from pathlib import Path

from jupyter_air.workloads.jobs.errors import OutOfRange
from jupyter_air.workloads.state.logs import node_dir, read_chunk
from jupyter_air.workloads.state.records import Attempt, Job


def page(job: Job, job_dir: Path, attempt: int, node: int, offset: int, limit: int) -> dict:
    """The log of ``node`` of ``attempt`` (-1: the latest) of ``job`` (its folder ``job_dir``) from byte ``offset``:
    whole lines, at most ``limit`` bytes, the offset to ask for next, ``complete`` once the attempt ended and
    everything was read."""
    chosen = choose(job, attempt, node)
    finished = chosen.ended_ms is not None
    chunk = read_chunk(node_dir(job_dir, chosen.attempt, node), offset, finished, limit)
    return {
        "job_run_id": job.job_run_id,
        "job_status": job.status,
        "attempt": chosen.attempt,
        "attempt_status": chosen.status,
        "node": node,
        "offset": offset,
        "next_offset": chunk.next_offset,
        "size_bytes": chunk.size_bytes,
        "complete": finished and chunk.next_offset == chunk.size_bytes,
        "text": chunk.text,
    }


def choose(job: Job, attempt: int, node: int) -> Attempt:
    """Attempt ``attempt`` (-1: the latest) of ``job``, checking it has ``node``; OutOfRange says what it has."""
    nodes = job.num_nodes
    if not 0 <= node < nodes:
        raise OutOfRange(f"job run {job.job_run_id} has {nodes} node(s) (0 to {nodes - 1}); there is no node {node}")
    if not job.attempts:
        raise OutOfRange(f"job run {job.job_run_id} has no attempt yet (it is {job.status})")
    if attempt == -1:
        return job.attempts[-1]
    found = next((a for a in job.attempts if a.attempt == attempt), None)
    if found is None:
        count = len(job.attempts)
        raise OutOfRange(
            f"job run {job.job_run_id} has {count} attempt(s) (0 to {count - 1}, -1 for the latest); "
            f"there is no attempt {attempt}"
        )
    return found
