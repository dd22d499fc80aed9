"""What runs one attempt, for the supervisor: a small strategy per kind of work and place.

The supervisor knows neither what an attempt runs nor where: it asks the executor's runner (an
:class:`AttemptRunner`, which :mod:`~jupyter_air.workloads.supervisor.kinds` names for the workload's ``kind`` and the
executor's place) to place it, start it once its MLflow run exists, wait for it, stop it and finish it. A command
here is :class:`LocalNodes`; another kind plugs in with a runner class per place (and, if it can tell, a
``check(spec)`` of why it cannot run there, asked before the job is created).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from jupyter_air import procs
from jupyter_air.cluster.errors import ClusterError
from jupyter_air.workloads.state.fair_share import Claim
from jupyter_air.workloads.state.ledger import GpuLedger, NoSuchGpus
from jupyter_air.workloads.state.logs import node_dir
from jupyter_air.workloads.state.quota import QuotaExceeded
from jupyter_air.workloads.state.store import JobStore
from jupyter_air.workloads.supervisor.gpus import cuda_environment, node_gpus
from jupyter_air.workloads.supervisor.node import NodeProcess, missing_program
from jupyter_air.workloads.supervisor.run_as import account_for
from jupyter_air.workloads.supervisor.service_secrets import without_service_secrets

#: Seconds between checks for free GPUs while a job waits for its reservation.
GPU_WAIT_POLL_SECONDS = 2.0


@dataclass(frozen=True)
class AttemptContext:
    """What a runner is given: the resolved workload, the attempt, the marker every process of it inherits, the
    user's umask, and the job (its store and id) for anything kept for the whole job (GPUs, files)."""

    spec: dict
    attempt: int
    marker: dict[str, str]
    umask: int | None
    store: JobStore
    job_run_id: str
    owner: str = ""

    @property
    def job_dir(self) -> Path:
        return self.store.job_dir(self.job_run_id)


class AttemptRunner(Protocol):
    """What runs one attempt. ``log_dirs[n]`` holds node ``n``'s ``output.log`` and ``output.ts`` (kept as the
    run's ``logs/attempt_<a>/node_<n>``); ``nodes`` says where each node ran (None on this machine); ``pid`` and
    ``started`` name the local root process (None when nothing runs here); ``problem`` is why the attempt fails
    whatever its exit status."""

    log_dirs: list[Path]
    nodes: list[dict] | None
    pid: int | None
    started: float | None
    problem: str | None

    def place(self, cancel: threading.Event, note: Callable[[str], None]) -> bool:
        """Take what the attempt runs on (False: canceled while waiting); raise ClusterError when it never can."""

    def start(self, overrides: dict[str, str], run) -> None:
        """Start the work with the environment ``overrides`` (its run's ``MLFLOW_*``), sampling system metrics
        into ``run`` (a ManagedRun) where it runs."""

    def wait(self, timeout: float) -> int | None:
        """The exit status once the work ended, else None after up to ``timeout`` seconds."""

    def stop(self, grace_seconds: float = procs.TERM_GRACE_SECONDS) -> int | None:
        """Stop the work (SIGTERM, SIGKILL after ``grace_seconds``); its exit status."""

    def finish(self) -> None:
        """Stop what the work left, write the rest of its output, free what it ran on (called once or more)."""


class LocalNodes:
    """A command on this machine: one NodeProcess on the GPUs the job reserved here, started once its run exists."""

    nodes = None

    @staticmethod
    def check(spec: dict) -> str | None:
        """``command: why`` when /bin/sh would not find the command's program here (it would exit 127)."""
        env = {**os.environ, **{k: str(v) for k, v in spec["env_variables"].items()}}
        problem = missing_program(spec["command"], spec["code_source"]["root_path"], env)
        return None if problem is None else f"command: {problem}"

    def __init__(self, context: AttemptContext):
        self.context = context
        self.log_dirs = [node_dir(context.job_dir, context.attempt, 0)]
        self.gpus: list[int] = []
        self.process: NodeProcess | None = None

    def place(self, cancel: threading.Event, note: Callable[[str], None]) -> bool:
        """Reserve the job's GPUs on this machine (kept across attempts); waits while other jobs hold them."""
        gpus = reserve_gpus(self.context, cancel, note)
        if gpus is None:
            return False
        self.gpus = gpus
        return True

    def start(self, overrides: dict[str, str], run) -> None:
        env = {
            **without_service_secrets(os.environ),  # on the team's job service: none of its credentials
            **overrides,
            "NODE_RANK": "0",
            "NUM_NODES": "1",
            "CUDA_VISIBLE_DEVICES": "",  # no GPU unless it holds some
            **cuda_environment(self.gpus),
        }
        spec, context = self.context.spec, self.context
        root = spec["code_source"]["root_path"]
        account = account_for(context.owner)
        self.process = NodeProcess(spec["command"], root, env, self.log_dirs[0], context.marker, context.umask, account)
        self.process.start()
        run.start_system_metrics(gpus=[str(i) for i in self.gpus])  # with the energy of the job's GPUs

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


def reserve_gpus(
    context: AttemptContext,
    cancel: threading.Event,
    note: Callable[[str], None],
    count: int | None = None,
    pool: str = "",
    indexes: Sequence[int] | None = None,
) -> list[int] | None:
    """GPU indexes of this machine held for the whole job, from the machine's GPU ledger (with ``pool``: ``count``
    of a Ray cluster's ``indexes``, which Ray then places); while its turn has not come, the job waits (PENDING)
    saying its place in line and who holds the GPUs; None when canceled meanwhile."""
    count = context.spec["compute"]["num_accelerators"] if count is None else count
    if count == 0:
        return []

    ledger = GpuLedger(context.store)
    claim = Claim(context.job_run_id, "job", context.owner, context.job_run_id, count, pool=pool)
    indexes = list(node_gpus().indexes if indexes is None else indexes)
    while not cancel.is_set():
        try:
            admission = ledger.claim(claim, indexes)
        except (NoSuchGpus, QuotaExceeded) as exc:
            raise ClusterError(str(exc)) from None
        if admission.gpus is not None:
            if not pool:  # a cluster's GPUs are Ray's to name
                context.store.update(context.job_run_id, gpus=list(admission.gpus))
            return list(admission.gpus)
        note(f"waiting for GPUs: {admission.reason}")
        cancel.wait(GPU_WAIT_POLL_SECONDS)
    ledger.release(claim.claim_id)
    return None
