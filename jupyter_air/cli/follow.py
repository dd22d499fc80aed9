"""Streaming output for `air logs --follow` and `air run --watch`: poll the log files, stop when the attempt ends.
On a terminal a line's control characters are written out as escapes (all but tabs and a progress bar's carriage
returns); to a pipe or a file the lines go as they are."""

from __future__ import annotations

import sys
import time

from jupyter_air.format import visible
from jupyter_air.workloads.state.logs import LogCursor, LogLine, node_dir
from jupyter_air.workloads.state.records import Job
from jupyter_air.workloads.state.store import JobStore
from jupyter_air.workloads.supervisor.control import reap

from . import output

#: Seconds between reads of a log file that has nothing new: short while output flows, longer when idle.
POLL_SECONDS = 0.01
IDLE_POLL_SECONDS = 0.1
#: Seconds without new output after which polling slows to IDLE_POLL_SECONDS.
_IDLE_AFTER_SECONDS = 2.0
#: Seconds between job-state reads while the log has nothing new.
_STATE_SECONDS = 0.2
#: Seconds between checks that the job's supervisor is still alive while following.
_REAP_SECONDS = 2.0


def emit(lines: list[LogLine], node: int, attempt: int, json_lines: bool) -> None:
    terminal = bool(lines) and not json_lines and sys.stdout.isatty()
    for item in lines:
        if json_lines:
            output.print_json({"ts": item.ts, "node": node, "attempt": attempt, "line": item.line}, compact=True)
        else:
            print(visible(item.line, keep="\t\r") if terminal else item.line)
    if lines:
        sys.stdout.flush()


def latest_attempt(job: Job) -> int | None:
    return job.attempts[-1].attempt if job.attempts else None


class _Refresher:
    """Re-reads the job (and now and then detects a dead supervisor) without hammering the store."""

    def __init__(self, store: JobStore, job: Job):
        self.store, self.job_run_id, self._reaped_at = store, job.job_run_id, time.monotonic()

    def __call__(self) -> Job:
        if time.monotonic() - self._reaped_at > _REAP_SECONDS:
            reap(self.store)
            self._reaped_at = time.monotonic()
        return self.store.get(self.job_run_id)


def _wait_for_attempt(refresh: _Refresher, attempt: int | None) -> tuple[Job, int | None]:
    """Wait until `attempt` (None: the first one) has started or the job has ended."""
    while True:
        job = refresh()
        wanted = 0 if attempt is None else attempt
        if any(a.attempt >= wanted for a in job.attempts):
            return job, latest_attempt(job) if attempt is None else attempt
        if not job.active:
            return job, None
        time.sleep(IDLE_POLL_SECONDS)


def _stream(refresh: _Refresher, job: Job, attempt: int, node: int, tail: int | None, json_lines: bool) -> Job:
    cursor = LogCursor(node_dir(refresh.store.job_dir(job.job_run_id), attempt, node))
    first = cursor.read()
    emit(first[-tail:] if tail else [] if tail == 0 else first, node, attempt, json_lines)
    last_output, checked = time.monotonic(), 0.0
    while True:
        lines = cursor.read()
        now = time.monotonic()
        if lines:
            emit(lines, node, attempt, json_lines)
            last_output = now
            continue
        if now - checked >= _STATE_SECONDS:
            checked = now
            job = refresh()
            ended = next((a.ended_ms is not None for a in job.attempts if a.attempt == attempt), not job.active)
            if ended or not job.active:
                emit(cursor.read(final=True), node, attempt, json_lines)
                return job
        time.sleep(POLL_SECONDS if now - last_output < _IDLE_AFTER_SECONDS else IDLE_POLL_SECONDS)


def follow_attempt(
    store: JobStore, job: Job, attempt: int | None, node: int, tail: int | None, json_lines: bool
) -> int:
    """Print one attempt's output as it is written until that attempt ends (default: the latest attempt)."""
    refresh = _Refresher(store, job)
    job, chosen = _wait_for_attempt(refresh, attempt)
    if chosen is None:
        why = visible(str(job.error))
        print(f"{job.job_run_id} ended ({job.status}) before any attempt started: {why}", file=sys.stderr)
        return 1
    _stream(refresh, job, chosen, node, tail, json_lines)
    return 0


def watch(store: JobStore, job: Job, json_lines: bool) -> int:
    """Stream node 0 of every attempt in turn until the job ends; 0 when it SUCCEEDED, 1 otherwise."""
    refresh = _Refresher(store, job)
    attempt = 0
    while True:
        job, chosen = _wait_for_attempt(refresh, attempt)
        if chosen is None:
            break
        if chosen > 0:
            previous = next(a for a in job.attempts if a.attempt == chosen - 1)
            why = visible(str(previous.error))
            print(f"attempt {previous.attempt} {previous.status}: {why}; retry {chosen}", file=sys.stderr)
        job = _stream(refresh, job, chosen, 0, None, json_lines)
        attempt = chosen + 1
    message = f"{job.job_run_id} {job.status}" + (f": {job.error}" if job.error else "")
    print(visible(message), file=sys.stderr)
    return 0 if job.status == "SUCCEEDED" else 1
