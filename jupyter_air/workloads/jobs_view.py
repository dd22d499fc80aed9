"""The `air` jobs of one AIR_HOME as the Experiment panel shows them: the CLI's JSON shapes, each attempt's link,
logs read by byte offset, cancel. Knows nothing of HTTP; blocking (SQLite, processes): call it off the event loop.

It never fails a job whose supervisor died: the server's periodic check does (``server_tasks.JobChecks``), so
reading the jobs stays a read.
"""

from __future__ import annotations

from pathlib import Path

from jupyter_air.cli.output import job_detail, job_summary
from jupyter_air.tracking.links import page_links, ui_fragment
from jupyter_air.tracking.store import is_remote, tracking_uri

from .control import cancel
from .logs import OUTPUT, node_dir, read_chunk
from .store import Attempt, Job, JobStore

DEFAULT_LIMIT, MAX_LIMIT = 50, 1000


class JobNotFound(LookupError):
    """No job run with that id under this AIR_HOME."""


class OutOfRange(LookupError):
    """An attempt or a node the job does not have; the message says which it has."""


class NotActive(ValueError):
    """The job has already ended, so there is nothing to cancel."""


def node_count(job: Job) -> int:
    """Nodes a job runs on: one, as the local executor runs every job on this node."""
    return 1


class JobsView:
    """Answers the jobs routes from the job database under ``home`` (never creating it)."""

    def __init__(self, home: Path, base_url: str = "/"):
        self.home = home
        self.base_url = base_url
        self._jobs: JobStore | None = None

    def list(self, limit: int = DEFAULT_LIMIT) -> dict:
        """Every job run, newest first, like ``air list --all-status -o json``, with attempts and links."""
        store = self._store()
        if store is None:
            return {"jobs": []}
        return {"jobs": [self._summary(job) for job in store.list(active_only=False, limit=limit)]}

    def get(self, job_run_id: str) -> dict:
        """One job run like ``air get -o json``, each attempt with its link."""
        job = self._job(job_run_id)
        return {**job_detail(job), **self._extras(job)}

    def cancel(self, job_run_id: str) -> dict:
        """Stop an active job (it ends CANCELED, its attempt's run KILLED) and answer its summary."""
        job = self._job(job_run_id)
        if not job.active:
            raise NotActive(f"job run {job_run_id} has already ended ({job.status}); there is nothing to cancel")
        return self._summary(cancel(self._store(), job))

    def logs(self, job_run_id: str, attempt: int, node: int, offset: int) -> dict:
        """The log of ``node`` of ``attempt`` (-1: the latest) from byte ``offset``, and the offset to ask next."""
        job = self._job(job_run_id)
        chosen = self._attempt(job, attempt, node)
        finished = chosen.ended_ms is not None
        chunk = read_chunk(self.log_dir(job, chosen.attempt, node), offset, finished)
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

    def log_file(self, job_run_id: str, attempt: int, node: int) -> tuple[Path, int]:
        """The whole log file of ``node`` of ``attempt`` (-1: the latest) and the attempt's number."""
        job = self._job(job_run_id)
        chosen = self._attempt(job, attempt, node)
        return self.log_dir(job, chosen.attempt, node) / OUTPUT, chosen.attempt

    def log_dir(self, job: Job, attempt: int, node: int) -> Path:
        return node_dir(self._store().job_dir(job.job_run_id), attempt, node)

    def _store(self) -> JobStore | None:
        if self._jobs is None and (self.home / "jobs.db").exists():
            self._jobs = JobStore(self.home)
        return self._jobs

    def _job(self, job_run_id: str) -> Job:
        store = self._store()
        job = store.get(job_run_id) if store is not None else None
        if job is None:
            raise JobNotFound(
                f"no job run {job_run_id[:100]!r} under AIR_HOME {self.home}; GET jupyter-air/jobs lists them"
            )
        return job

    def _attempt(self, job: Job, attempt: int, node: int) -> Attempt:
        nodes = node_count(job)
        if node >= nodes:
            raise OutOfRange(
                f"job run {job.job_run_id} has {nodes} node(s) (0 to {nodes - 1}); there is no node {node}"
            )
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

    def _summary(self, job: Job) -> dict:
        return {**job_summary(job), **self._extras(job)}

    def _extras(self, job: Job) -> dict:
        """What the panel adds to the CLI's shapes: nodes, and each attempt with the link that opens its run."""
        attempts = [{**a.to_json(), "url": self._attempt_url(job, a)} for a in job.attempts]
        return {"num_nodes": node_count(job), "attempts": attempts}

    def _attempt_url(self, job: Job, attempt: Attempt) -> str | None:
        if attempt.mlflow_run_id is None:
            return None
        uri = job.tracking_uri or tracking_uri()
        if uri == tracking_uri():
            return page_links(self.base_url, job.experiment_id or "0", attempt.mlflow_run_id).run
        if is_remote(uri):
            return uri.rstrip("/") + "/" + ui_fragment(job.experiment_id or "0", attempt.mlflow_run_id)
        return None  # another local store than this server's: its UI is not served here
