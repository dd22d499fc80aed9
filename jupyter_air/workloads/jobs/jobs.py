"""The one path of every job: submit, cancel, read and follow it, for the `air` command, the server's routes,
remote notebook calls and whatever schedules jobs next. Callers only format what it returns (``job_json``).

    from jupyter_air.workloads.jobs.jobs import Jobs

    jobs = Jobs()                                   # the jobs of $AIR_HOME (reads never create its database)
    job = jobs.submit_file("train.yaml")            # SubmitError lists every problem at once
    job = jobs.submit(workload, source="notebook.ipynb", files={"payload.pkl": data})
    jobs.get(job.job_run_id); jobs.cancel(job.job_run_id)
    jobs.logs(job.job_run_id, attempt=-1, node=1, offset=0)   # whole lines, bounded, from a byte offset
"""

from __future__ import annotations

import getpass
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jupyter_air.cluster.address import is_client
from jupyter_air.cluster.errors import ClusterError
from jupyter_air.error_kinds import REFUSED_ELSEWHERE
from jupyter_air.home import air_home, air_home_path, open_private
from jupyter_air.tracking.store import tracking_uri
from jupyter_air.workloads.jobs import job_logs
from jupyter_air.workloads.jobs.errors import JobNotFound, NotActive, SubmitError, invalid
from jupyter_air.workloads.state.ledger import GpuLedger
from jupyter_air.workloads.state.logs import CHUNK_BYTES, OUTPUT, node_dir
from jupyter_air.workloads.state.permissions import (
    Caller,
    Directory,
    OwnerOnly,
    Permissions,
    grant_problems,
    job_target,
)
from jupyter_air.workloads.state.quota import shared_gpus
from jupyter_air.workloads.state.records import Job
from jupyter_air.workloads.state.store import JobStore
from jupyter_air.workloads.supervisor import ray_jobs
from jupyter_air.workloads.supervisor.control import cancel, reap
from jupyter_air.workloads.supervisor.executor import WarmStart, executor_for
from jupyter_air.workloads.supervisor.gpus import check_local, local_count
from jupyter_air.workloads.supervisor.run_as import account_problem


@dataclass(frozen=True)
class Resolved:
    """A validated workload made ready to run: the dict a job stores, its executor, and what to tell the user."""

    workload: dict[str, Any]
    source: str
    executor: str
    notes: list[str]


class Jobs:
    """The jobs of one AIR_HOME (default ``$AIR_HOME``); blocking (SQLite, processes): keep it off event loops."""

    def __init__(self, home: Path | None = None, caller: Caller | None = None, directory: Directory | None = None):
        """``caller``: who asks (None: AIR_HOME's owner, may do all); ``directory``: whom grants may name."""
        self.home = Path(home) if home is not None else air_home_path()
        self.caller, self.directory = caller, directory or OwnerOnly(getpass.getuser())
        self._store: JobStore | None = None

    @property
    def owner(self) -> str:
        """Who owns what this caller submits: the caller (a hub user on the team's job service), else this user."""
        return self.caller.name if self.caller is not None else getpass.getuser()

    @property
    def permissions(self) -> Permissions:
        return Permissions(self.store, self.directory, self.caller)

    @property
    def store(self) -> JobStore:
        """The job store, created on first use (a submit): see :meth:`create`."""
        return self.create()

    def create(self) -> JobStore:
        """AIR_HOME and its job database, created owner-only if missing (AirHomeError says how to fix a bad one)."""
        if self._store is None:
            self._store = JobStore(air_home({"AIR_HOME": str(self.home)}))
        return self._store

    def gpu_queue(self) -> dict:
        """This machine's GPU ledger (:meth:`GpuLedger.describe`); empty while AIR_HOME has no job store."""
        store = self._existing()
        if store is None:
            return {"held": [], "queued": [], "recent_gpu_hours": {}, "shared_gpus": list(shared_gpus())}
        return GpuLedger(store).describe()

    def _waiting(self, user: str) -> int:
        """How many of ``user``'s claims wait for GPUs (none while AIR_HOME has no job store: a check creates none)."""
        store = self._existing()
        return 0 if store is None else GpuLedger(store).waiting(user)

    def _existing(self) -> JobStore | None:
        return self.store if self._store is not None or (self.home / "jobs.db").exists() else None

    # Submitting.

    def resolve_file(
        self, path: str | Path, overrides: tuple[str, ...] = (), ray_address: str | None = None, label=None, text=None
    ) -> Resolved:
        """Validate the workload file at ``path`` (named ``label`` in errors, default ``path``; its ``text`` when it
        was sent) with ``overrides``, and choose where it runs; raises SubmitError."""
        # Lazy: reading workload files (pydantic, YAML) would add 73 ms to `air list`, `logs`, `cancel`, supervisors.
        from jupyter_air.workloads.file.loader import WorkloadError, load_workload

        label = str(label or path)
        try:
            loaded = load_workload(path, overrides, label=label, text=text)
        except WorkloadError as err:
            raise SubmitError(str(err), err.problems) from None
        workload, source = loaded.as_dict(), str(loaded.source)
        return self.resolve(workload, source=source, ray_address=ray_address, label=label, locate=loaded.locate)

    def resolve(
        self,
        workload: dict,
        *,
        source: str,
        ray_address: str | None = None,
        label: str | None = None,
        locate: Callable[[str, str], str] | None = None,
        here: bool = False,
    ) -> Resolved:
        """Choose where a validated workload (``ResolvedWorkload.as_dict()``) runs: this machine (its GPUs and its
        command's program checked) or a Ray cluster (its shape resolved into ``compute``; its supervisor a Ray Job
        unless ``here`` or the cluster is reached through Ray Client); raises SubmitError. ``locate(problem,
        label)`` names the line of a ``field: why`` problem (``ResolvedWorkload.locate``)."""
        from jupyter_air.workloads.file.scale import ScaleError, plan  # lazy, as in resolve_file
        from jupyter_air.workloads.file.spec import Compute

        label = label or source
        where = (lambda problem: locate(problem, label)) if locate else (lambda problem: f"{label}: {problem}")
        spec = {**workload, "compute": dict(workload["compute"])}
        compute = Compute.model_validate({k: v for k, v in spec["compute"].items() if k in Compute.model_fields})
        try:
            scale = plan(compute, ray_address, local_count)
        except ScaleError as err:
            raise invalid(label, [where(str(err))]) from None
        except ClusterError as err:
            raise SubmitError(str(err), [str(err)], kind=REFUSED_ELSEWHERE) from None
        problems = grant_problems(spec.get("permissions", []), self.directory)
        notes, executor = [], scale.executor
        if executor == "local":
            problem, notes = check_local(compute.num_accelerators, compute.accelerator_type, self.owner, self._waiting)
            problems += [p for p in (problem, account_problem(self.owner)) if p]
        else:
            shape = {"num_nodes": scale.num_nodes, "gpus_per_node": scale.gpus_per_node, "ray_address": scale.address}
            spec["compute"].update(shape)
            executor = "ray" if here or is_client(scale.address) else "ray-job"
        problem = executor_for(executor).command_problem(spec)
        problems += [problem] if problem else []
        if problems:
            raise invalid(label, [where(p) for p in problems])
        if executor == "ray-job":
            try:
                ray_jobs.dashboard_url(scale.address)
            except ClusterError as err:
                raise SubmitError(str(err), [str(err)], kind=REFUSED_ELSEWHERE) from None
        return Resolved(spec, source, executor, notes)

    def submit_file(self, path: str | Path, *, overrides=(), ray_address=None, label=None, user=None, text=None) -> Job:
        """Validate, record and start the workload file at ``path``; returns the job (PENDING)."""
        return self.start(self.resolve_file(path, tuple(overrides), ray_address, label, text), user=user)

    def submit(
        self,
        workload: dict,
        *,
        source: str,
        user: str | None = None,
        ray_address: str | None = None,
        files: Mapping[str, bytes] | None = None,
        warm: WarmStart | None = None,
    ) -> Job:
        """Record and start a validated workload (``ResolvedWorkload.as_dict()``, or a dict of that shape with
        another ``kind`` of work); ``files`` are written owner-only into the job's folder before its supervisor
        starts (what the work's runner reads there). With ``warm`` the supervisor runs on this machine, on a Ray
        cluster too (no Ray Job), forked by ``warm`` from a warm process where one runs."""
        resolved = self.resolve(workload, source=source, ray_address=ray_address, here=warm is not None)
        return self.start(resolved, user=user, files=files, warm=warm)

    def start(
        self,
        resolved: Resolved,
        *,
        user: str | None = None,
        files: Mapping[str, bytes] | None = None,
        warm: WarmStart | None = None,
    ) -> Job:
        """Record a resolved workload as a job and start its supervisor."""
        executor = executor_for(resolved.executor)
        store, user = self.store, user or self.owner
        job = store.create_job(resolved.workload, resolved.source, user, executor.name, tracking_uri())
        self.permissions.record(job_target(job), resolved.workload.get("permissions", []), user)
        for name, data in (files or {}).items():
            with open_private(store.job_dir(job.job_run_id) / name, "wb") as f:
                f.write(data)
        try:
            executor.submit(store, job, warm)
        except BaseException as err:
            store.finish(job.job_run_id, "FAILED", f"not started: {type(err).__name__}: {err}")
            if isinstance(err, ClusterError):
                raise SubmitError(str(err), [str(err)], kind=REFUSED_ELSEWHERE) from None
            raise
        return store.get(job.job_run_id)

    # Reading and controlling.

    def get(self, job_run_id: str, action: str = "view") -> Job:
        """The job, once the caller may do ``action`` to it (Forbidden says whom to ask)."""
        store = self._existing()
        job = store.get(job_run_id) if store is not None else None
        if job is None:
            raise JobNotFound(f"no job run {job_run_id[:100]!r} under AIR_HOME {self.home}")
        if self.caller is not None:
            self.permissions.require(job_target(job), action)
        return job

    def list(self, active_only: bool = True, limit: int = 50, **equal: str) -> list[Job]:
        """Job runs the caller may see, newest first (active only unless ``active_only`` is False), by columns."""
        store = self._existing()
        jobs = [] if store is None else store.list(active_only=active_only, limit=limit, **equal)
        if self.caller is None:
            return jobs
        shown = self.permissions.visible([job_target(job) for job in jobs])
        return [job for job, seen in zip(jobs, shown, strict=True) if seen]

    def cancel(self, job_run_id: str) -> Job:
        """Stop an active job (it ends CANCELED, its attempt's run KILLED) and return it once it has ended."""
        job = self.get(job_run_id, "cancel")
        if not job.active:
            raise NotActive(f"job run {job_run_id} has already ended ({job.status}); there is nothing to cancel")
        return cancel(self.store, job)

    def reap(self) -> list[str]:
        """Fail the active jobs whose supervisor is gone (never creates the database); their ids."""
        store = self._existing()
        return [] if store is None else reap(store)

    def logs(self, job_run_id: str, attempt: int = -1, node: int = 0, offset: int = 0, limit: int = CHUNK_BYTES):
        """The log of ``node`` of ``attempt`` (-1: the latest) from byte ``offset``: whole lines, at most ``limit``
        bytes, and the offset to ask for next (``complete`` once the attempt ended and everything was read)."""
        job = self.get(job_run_id, "logs")
        return job_logs.page(job, self.home / "jobs" / job.job_run_id, attempt, node, offset, limit)

    def log_file(self, job_run_id: str, attempt: int = -1, node: int = 0) -> tuple[Path, int]:
        """The whole log file of ``node`` of ``attempt`` (-1: the latest) and the attempt's number."""
        job = self.get(job_run_id, "logs")
        chosen = job_logs.choose(job, attempt, node)
        return self.log_dir(job, chosen.attempt, node) / OUTPUT, chosen.attempt

    def log_dir(self, job: Job, attempt: int, node: int) -> Path:
        return node_dir(self.home / "jobs" / job.job_run_id, attempt, node)
