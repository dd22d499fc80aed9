"""Executors start and stop what runs a job; `local` runs a detached supervisor on this machine."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from abc import ABC, abstractmethod
from pathlib import Path

from jupyter_air import procs
from jupyter_air.home import open_private

from .store import Job, JobStore, now_ms

#: Seconds a submitted job may go without a recorded supervisor before it counts as lost.
_START_GRACE_SECONDS = 30


class Executor(ABC):
    """What a backend must do for the `air` commands; a cluster backend implements the same four calls."""

    name: str

    @abstractmethod
    def submit(self, store: JobStore, job: Job) -> None:
        """Start running `job` in the background and return at once."""

    @abstractmethod
    def request_cancel(self, store: JobStore, job: Job) -> None:
        """Ask whatever runs `job` to stop it (it ends the job as CANCELED)."""

    @abstractmethod
    def is_alive(self, job: Job) -> bool:
        """Whether whatever runs `job` still exists; False makes the job FAILED on the next command."""

    @abstractmethod
    def stop_leftovers(self, job: Job) -> None:
        """Stop every process of `job` that its runner left behind."""


class LocalExecutor(Executor):
    """One supervisor process per job on this machine, in its own session so it outlives the terminal."""

    name = "local"

    def submit(self, store: JobStore, job: Job) -> None:
        job_dir = store.job_dir(job.job_run_id)
        package_parent = str(Path(__file__).resolve().parents[2])
        code = (
            "import sys; sys.path.insert(0, sys.argv.pop(1)); "
            "from jupyter_air.workloads.supervisor import main; main(sys.argv[1:])"
        )
        with open_private(job_dir / "supervisor.log") as log:
            proc = subprocess.Popen(
                [sys.executable, "-c", code, package_parent, job.job_run_id],
                cwd=job_dir,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                env={**os.environ, "AIR_HOME": str(store.home)},
            )
        store.update(job.job_run_id, supervisor_pid=proc.pid, supervisor_started=procs.start_time(proc.pid))

    def request_cancel(self, store: JobStore, job: Job) -> None:
        store.update(job.job_run_id, cancel_requested=1)
        if procs.is_alive(job.supervisor_pid, job.supervisor_started):
            with contextlib.suppress(ProcessLookupError):
                os.kill(job.supervisor_pid, signal.SIGTERM)

    def is_alive(self, job: Job) -> bool:
        if job.supervisor_pid is None:
            return now_ms() - job.submitted_ms < _START_GRACE_SECONDS * 1000
        return procs.is_alive(job.supervisor_pid, job.supervisor_started)

    def stop_leftovers(self, job: Job) -> None:
        from .supervisor import attempt_marker

        for attempt in job.attempts:  # the workload first: its log pump then writes the rest and exits
            if attempt.ended_ms is None:
                procs.stop_tree(
                    attempt.pid, attempt.pid_started, marker=attempt_marker(job.job_run_id, attempt.attempt)
                )
        if job.supervisor_pid and procs.is_alive(job.supervisor_pid, job.supervisor_started):
            procs.stop_tree(job.supervisor_pid, job.supervisor_started, grace_seconds=1)


EXECUTORS: dict[str, type[Executor]] = {LocalExecutor.name: LocalExecutor}


def executor_for(job_or_name: Job | str) -> Executor:
    name = job_or_name if isinstance(job_or_name, str) else job_or_name.executor
    return EXECUTORS[name]()
