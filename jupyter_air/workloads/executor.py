"""Executors start and stop what runs a job, and say where its attempts run.

Both run a detached supervisor on this machine. ``local`` runs each attempt here (a NodeProcess);
``ray`` runs it on ``compute.num_nodes`` nodes of a Ray cluster, the supervisor being Ray's driver
(one actor per node, each running the command as a NodeProcess: see ``ray_nodes``).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable
from pathlib import Path

from jupyter_air import procs
from jupyter_air.home import open_private

from .logs import node_dir
from .node import NodeProcess, missing_program
from .store import Job, JobStore, now_ms

#: Seconds a submitted job may go without a recorded supervisor before it counts as lost.
_START_GRACE_SECONDS = 30


class Executor(ABC):
    """What a backend must do for the `air` commands and for the supervisor of each job."""

    name: str
    #: Whether attempts run on this machine (GPUs reserved here, system metrics sampled here).
    runs_here: bool = True

    @abstractmethod
    def nodes(
        self, spec: dict, job_dir: Path, attempt: int, marker: dict[str, str], umask: int | None, gpus: list[int]
    ):
        """What runs one attempt: ``place(cancel, note)``, ``start(overrides, metrics_interval_seconds)``, then
        the calls of a :class:`NodeProcess` (``wait``, ``stop``, ``finish``, ``problem``, ``pid``), ``log_dirs``
        and ``nodes`` (where each node ran, or None on this machine)."""

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

    def command_problem(self, spec: dict) -> str | None:
        """Why the workload's command cannot start where this executor runs it (``command: why``), checked before
        anything is created; None when it can, or when only the node running it can tell."""
        return None


class LocalNodes:
    """An attempt on this machine: the command as one NodeProcess, started once the attempt's run exists."""

    nodes = None

    def __init__(self, spec: dict, job_dir: Path, attempt: int, marker: dict[str, str], umask, gpus: list[int]):
        self.spec = spec
        self.marker = marker
        self.umask = umask
        self.gpus = gpus
        self.log_dirs = [node_dir(job_dir, attempt, 0)]
        self.process: NodeProcess | None = None

    def place(self, cancel: threading.Event, note: Callable[[str], None]) -> bool:
        return True  # the GPUs were reserved for the whole job

    def start(self, overrides: dict[str, str], metrics_interval_seconds: float | None) -> None:
        env = {
            **os.environ,
            **overrides,
            "NODE_RANK": "0",
            "NUM_NODES": "1",
            "CUDA_VISIBLE_DEVICES": ",".join(str(i) for i in self.gpus),
        }
        root = self.spec["code_source"]["root_path"]
        self.process = NodeProcess(self.spec["command"], root, env, self.log_dirs[0], self.marker, self.umask)
        self.process.start()

    @property
    def pid(self) -> int | None:
        return self.process.pid

    @property
    def started(self) -> float | None:
        return self.process.started

    @property
    def problem(self) -> str | None:
        return self.process.problem

    def wait(self, timeout: float) -> int | None:
        return self.process.wait(timeout)

    def stop(self, grace_seconds: float = procs.TERM_GRACE_SECONDS) -> int | None:
        return self.process.stop(grace_seconds)

    def finish(self) -> None:
        if self.process is not None:
            self.process.finish()


class LocalExecutor(Executor):
    """One supervisor process per job on this machine, in its own session so it outlives the terminal."""

    name = "local"

    def nodes(self, spec, job_dir, attempt, marker, umask, gpus) -> LocalNodes:
        return LocalNodes(spec, job_dir, attempt, marker, umask, gpus)

    def command_problem(self, spec: dict) -> str | None:
        env = {**os.environ, **{k: str(v) for k, v in spec["env_variables"].items()}}
        problem = missing_program(spec["command"], spec["code_source"]["root_path"], env)
        return None if problem is None else f"command: {problem}"

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


class RayExecutor(LocalExecutor):
    """The supervisor here, each attempt on nodes of a Ray cluster (placed again for every attempt).

    Killing the supervisor ends its Ray connection: Ray kills its actors, and each node's guard stops the
    command there, so stopping leftovers here is all a cancel needs.
    """

    name = "ray"
    runs_here = False

    def command_problem(self, spec: dict) -> str | None:
        return None  # the nodes of the cluster have their own programs

    def nodes(self, spec, job_dir, attempt, marker, umask, gpus):
        from .ray_nodes import RayNodes

        return RayNodes(spec, job_dir, attempt, marker, umask)


EXECUTORS: dict[str, type[Executor]] = {LocalExecutor.name: LocalExecutor, RayExecutor.name: RayExecutor}


def executor_for(job_or_name: Job | str) -> Executor:
    name = job_or_name if isinstance(job_or_name, str) else job_or_name.executor
    return EXECUTORS[name]()
