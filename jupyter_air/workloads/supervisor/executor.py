"""Executors start and stop what runs a job (its supervisor), and say where its attempts run.

``local`` runs a detached supervisor on this machine and each attempt here. ``ray-job`` runs the supervisor as a
Ray Job inside the cluster (see :mod:`ray_jobs`) and each attempt on ``compute.num_nodes`` nodes (one actor per
node: see ``ray_nodes``); ``ray`` does the same with the supervisor detached on this machine, for a cluster
reached through Ray Client (``ray://``), where this machine is no node the Ray Job could be pinned to.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
from abc import ABC, abstractmethod
from collections.abc import Callable
from pathlib import Path

from jupyter_air import procs
from jupyter_air.home import open_private
from jupyter_air.tracking.naming import EXPERIMENT_TAG, JOB_TAG, USER_TAG
from jupyter_air.workloads.state.records import Job, attempt_marker, now_ms
from jupyter_air.workloads.state.store import JobStore
from jupyter_air.workloads.supervisor import ray_jobs
from jupyter_air.workloads.supervisor.kinds import runner_check, runner_for, runner_prestart
from jupyter_air.workloads.supervisor.runners import AttemptContext, AttemptRunner
from jupyter_air.workloads.supervisor.service_secrets import without_service_secrets

#: Seconds a submitted job may go without a recorded supervisor before it counts as lost.
_START_GRACE_SECONDS = 30
#: What a supervisor of a Ray Job is given from the submitter's environment: Ray's own variables stay the job's.
_NOT_PASSED = ("RAY_",)
ENVIRONMENT_FILE = "environment.json"
#: Forks a job's supervisor from a process that imported it already (job run id, environment, folder, log file
#: descriptor): the supervisor's PID, or None when no such process runs (the supervisor then starts cold).
WarmStart = Callable[[str, dict[str, str], Path, int], "int | None"]


class Executor(ABC):
    """What a backend must do for the `air` commands and for the supervisor of each job."""

    name: str
    #: Where attempts run: ``local`` (this machine) or ``ray`` (nodes of a Ray cluster); see ``kinds.RUNNERS``.
    place: str

    def runner(self, context: AttemptContext) -> AttemptRunner:
        """What runs one attempt of the job, here or on the cluster."""
        return runner_for(context, self.place)

    @abstractmethod
    def submit(self, store: JobStore, job: Job, warm: WarmStart | None = None) -> None:
        """Start running `job` in the background and return at once (its supervisor from ``warm`` where it can)."""

    @abstractmethod
    def request_cancel(self, store: JobStore, job: Job) -> None:
        """Ask whatever runs `job` to stop it (it ends the job as CANCELED)."""

    @abstractmethod
    def gone(self, store: JobStore, job: Job) -> str | None:
        """Why whatever runs `job` no longer exists (the job then fails), None while it does; records what it
        learns of it."""

    @abstractmethod
    def stop_leftovers(self, job: Job) -> None:
        """Stop every process of `job` that its runner left behind."""

    def observe(self, store: JobStore, job: Job) -> None:
        """Record what the runner of an ended job says of it now (nothing to ask, but for a Ray Job)."""
        return None

    def command_problem(self, spec: dict) -> str | None:
        """Why the workload cannot start where this executor runs it (``field: why``, e.g. a command whose program
        is not here), checked before anything is created; None when it can, or when only its nodes can tell."""
        return runner_check(spec, self.place)


class LocalExecutor(Executor):
    """One supervisor process per job on this machine, in its own session so it outlives the terminal."""

    name = "local"
    place = "local"

    def submit(self, store: JobStore, job: Job, warm: WarmStart | None = None) -> None:
        job_dir = store.job_dir(job.job_run_id)
        env = {**without_service_secrets(os.environ), "AIR_HOME": str(store.home)}  # it reads the secrets file
        with open_private(job_dir / "supervisor.log") as log:
            pid = warm(job.job_run_id, env, job_dir, log.fileno()) if warm is not None else None
            if pid is None:
                pid = subprocess.Popen(
                    supervisor_argv(job.job_run_id),
                    cwd=job_dir,
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                    env=env,
                ).pid
        store.update(job.job_run_id, supervisor_pid=pid, supervisor_started=procs.start_time(pid))

    def request_cancel(self, store: JobStore, job: Job) -> None:
        store.update(job.job_run_id, cancel_requested=1)
        if procs.is_alive(job.supervisor_pid, job.supervisor_started):
            with contextlib.suppress(ProcessLookupError):
                os.kill(job.supervisor_pid, signal.SIGTERM)

    def gone(self, store: JobStore, job: Job) -> str | None:
        if job.supervisor_pid is None:
            if now_ms() - job.submitted_ms < _START_GRACE_SECONDS * 1000:
                return None
            return f"its supervisor never started (within {_START_GRACE_SECONDS} s) while the job was {job.status}"
        if procs.is_alive(job.supervisor_pid, job.supervisor_started):
            return None
        return (
            f"supervisor process {job.supervisor_pid} is gone (killed, or the machine restarted) while the job was "
            f"{job.status}"
        )

    def stop_leftovers(self, job: Job) -> None:
        for attempt in job.attempts:  # the workload first: its log pump then writes the rest and exits
            if attempt.ended_ms is None:
                procs.stop_tree(
                    attempt.pid, attempt.pid_started, marker=attempt_marker(job.job_run_id, attempt.attempt)
                )
        if job.supervisor_pid and procs.is_alive(job.supervisor_pid, job.supervisor_started):
            procs.stop_tree(job.supervisor_pid, job.supervisor_started, grace_seconds=1)


class RayExecutor(LocalExecutor):
    """The supervisor detached here, each attempt on nodes of a Ray cluster (placed again for every attempt).

    Killing the supervisor ends its Ray connection: Ray kills its actors, and each node's guard stops the
    command there, so stopping leftovers here is all a cancel needs.
    """

    name = "ray"
    place = "ray"


class RayJobExecutor(RayExecutor):
    """The supervisor as a Ray Job of the cluster (its submission id is the job run id), attempts on its nodes.

    Ray's status of the job is the truth while Ray knows the job: it is mirrored into the store (``ray_status``),
    and a job Ray has ended while the store says it runs is failed (or canceled) for its supervisor. While the
    supervisor (Ray's driver of the job, pinned to this machine) runs here, Ray's status is RUNNING, as the
    supervisor recorded it: a look then asks Ray nothing (a process asking Ray imports it: about 2 CPU-seconds).
    """

    name = "ray-job"

    def submit(self, store: JobStore, job: Job, warm: WarmStart | None = None) -> None:
        job_dir = store.job_dir(job.job_run_id)
        passed = {k: v for k, v in without_service_secrets(os.environ).items() if not k.startswith(_NOT_PASSED)}
        with open_private(job_dir / ENVIRONMENT_FILE) as f:  # a user's tracking credentials: owner-only
            f.write(json.dumps(passed).encode())
        open_private(job_dir / "supervisor.log").close()  # owner-only before Ray's shell appends to it
        metadata = {JOB_TAG: job.job_run_id, EXPERIMENT_TAG: job.experiment_name, USER_TAG: job.user}
        argv = supervisor_argv(job.job_run_id, str(store.home))
        drop = runner_prestart(job.workload, self.place, job.job_run_id, job_dir)  # started while Ray starts it
        try:
            url = ray_jobs.submit(job.job_run_id, job_dir, argv, job.workload["compute"]["ray_address"], metadata)
        except BaseException:
            drop()
            raise
        store.update(job.job_run_id, ray_job_url=url, ray_status="PENDING")

    def request_cancel(self, store: JobStore, job: Job) -> None:
        store.update(job.job_run_id, cancel_requested=1)
        if job.ray_job_url:
            ray_jobs.stop(job.ray_job_url, job.job_run_id)

    def gone(self, store: JobStore, job: Job) -> str | None:
        if job.ray_job_url is None:  # not submitted (yet): as a detached supervisor would be
            return super().gone(store, job)
        if self._driving(job):
            return None
        seen = self._mirror(store, job)
        if seen is None:  # the job server cannot be asked now: the supervisor runs on this machine, look there
            return super().gone(store, job) if job.supervisor_pid else None
        if seen.status in ray_jobs.ACTIVE:
            return None
        if seen.status is None:
            return f"its Ray job is gone: {seen.message}"
        said = f": {seen.message}" if seen.message else ""
        return f"its Ray job ended {seen.status} while the job was {job.status}{said}"

    def stop_leftovers(self, job: Job) -> None:
        if job.ray_job_url:
            ray_jobs.stop(job.ray_job_url, job.job_run_id)
        super().stop_leftovers(job)

    def observe(self, store: JobStore, job: Job) -> None:
        if job.ray_job_url is not None and job.ray_status in ray_jobs.ACTIVE and not self._driving(job):
            self._mirror(store, job)  # Ray's last word is not in yet

    @staticmethod
    def _driving(job: Job) -> bool:
        """True while the job's supervisor, having said Ray runs it, is alive here."""
        alive = job.supervisor_pid is not None and procs.is_alive(job.supervisor_pid, job.supervisor_started)
        return alive and job.ray_status == "RUNNING"

    @staticmethod
    def _mirror(store: JobStore, job: Job) -> ray_jobs.RayJobState | None:
        """Ray's state of the job now, its status recorded as ``ray_status``; None when Ray cannot be asked."""
        seen = ray_jobs.state(job.ray_job_url, job.job_run_id)
        if seen is not None and seen.status != job.ray_status:
            store.update(job.job_run_id, ray_status=seen.status)
        return seen


def supervisor_argv(*args: str) -> list[str]:
    """The command of a job's supervisor: this Python with this package first on its path, then ``args``."""
    package_parent = str(Path(__file__).resolve().parents[2])
    code = (
        "import sys; sys.path.insert(0, sys.argv.pop(1)); "
        "from jupyter_air.workloads.supervisor.process import main; main(sys.argv[1:])"
    )
    return [sys.executable, "-c", code, package_parent, *args]


EXECUTORS: dict[str, type[Executor]] = {
    executor.name: executor for executor in (LocalExecutor, RayExecutor, RayJobExecutor)
}


def executor_for(job_or_name: Job | str) -> Executor:
    name = job_or_name if isinstance(job_or_name, str) else job_or_name.executor
    return EXECUTORS[name]()
