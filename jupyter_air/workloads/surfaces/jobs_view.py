"""The `air` jobs of one AIR_HOME as the Experiment panel shows them: the jobs' JSON (``job_json``) with each
attempt's link, submitted from a workload file under the server's root, logs read by byte offset, cancel. Knows
nothing of HTTP; blocking (SQLite, processes): call it off the event loop. The work is the one job path's
(:class:`~jupyter_air.workloads.jobs.jobs.Jobs`).

It never fails a job whose supervisor died: the server's periodic check does (``server.tasks.JobChecks``), so
reading the jobs stays a read.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from pathlib import Path

from jupyter_air.tracking.links import page_links, ui_fragment
from jupyter_air.tracking.store import is_remote, tracking_uri
from jupyter_air.workloads.jobs.jobs import Jobs, SubmitError
from jupyter_air.workloads.jobs.shapes import job_detail, job_summary
from jupyter_air.workloads.schedules.schedules import keep
from jupyter_air.workloads.state.permissions import Caller
from jupyter_air.workloads.state.records import Attempt, Job
from jupyter_air.workloads.surfaces.access import Access

DEFAULT_LIMIT, MAX_LIMIT = 50, 1000
#: Bytes per block when a whole log is read.
_BLOCK_BYTES = 1 << 20


class JobsView:
    """Answers the jobs routes from the job database under ``home`` (only a submit creates it), for ``caller`` (None:
    AIR_HOME's owner) with grants naming the users and groups of ``directory`` (default: the owner alone). Links
    open runs through the Jupyter server at ``base_url`` (None: no Jupyter server, only a remote tracking server's
    pages)."""

    def __init__(self, home: Path, base_url: str | None = "/", caller: Caller | None = None, directory=None):
        self.jobs = Jobs(home, caller, directory)
        self.base_url = base_url
        self.token: str | None = None  # the caller's bearer token for the tracking server (see ``as_caller``)

    def as_caller(self, caller: Caller, token: str | None = None) -> JobsView:
        """This view as ``caller`` sees it, on the same job store (opened once, not per request); ``token``: theirs,
        with which experiment grants are made as them."""
        view, view.jobs = copy.copy(self), copy.copy(self.jobs)
        view.jobs.caller, view.token = caller, token
        return view

    def list(self, limit: int = DEFAULT_LIMIT, schedule: str | None = None) -> dict:
        """Every job run (or those ``schedule`` fired), newest first, like ``air list --all-status -o json``, with
        attempts and links."""
        fired = {"schedule": schedule} if schedule else {}
        return {"jobs": [self._summary(job) for job in self.jobs.list(active_only=False, limit=limit, **fired)]}

    def get(self, job_run_id: str) -> dict:
        """One job run like ``air get -o json``, each attempt with its link."""
        return self.detail(self.jobs.get(job_run_id))

    def submit(self, root: Path, path: str) -> dict:
        """Submit the workload file at ``path`` (relative to the server's ``root``) as ``air run -f`` does; what
        ``get`` answers for the new job, or ``{"created", "schedule"}`` for a workload with a ``schedule:``, kept
        as the user's schedule. SubmitError (every problem, named by ``path``) for a bad file or path."""
        resolved = self.jobs.resolve_file(workload_file(root, path), label=path)
        if "schedule" in resolved.workload:
            return keep(self.jobs, resolved)
        return self.detail(self.jobs.start(resolved))

    def cancel(self, job_run_id: str) -> dict:
        """Stop an active job (it ends CANCELED, its attempt's run KILLED) and answer its summary."""
        return self._summary(self.jobs.cancel(job_run_id))

    def permissions(self, name: str) -> dict:
        """Who may use the job (its run id) or schedule (its name): its owner, the grants on it (and, for a job, its
        schedule's), the caller's level."""
        return Access(self.jobs, self.token).list(name)

    def grant(self, name: str, user: str | None, group: str | None, level: str | None) -> dict:
        """Give ``user`` or ``group`` ``level`` on the job or schedule (None: take it back), as ``air permissions``
        does."""
        return Access(self.jobs, self.token).grant(name, user, group, level)

    def logs(self, job_run_id: str, attempt: int, node: int, offset: int) -> dict:
        """The log of ``node`` of ``attempt`` (-1: the latest) from byte ``offset``, and the offset to ask next."""
        return self.jobs.logs(job_run_id, attempt, node, offset)

    def log_blocks(self, job_run_id: str, attempt: int, node: int) -> tuple[int, Iterator[bytes]]:
        """The attempt's number (``attempt`` -1: the latest) and the log of ``node`` as it is now, block by block."""
        path, number = self.jobs.log_file(job_run_id, attempt, node)

        def blocks() -> Iterator[bytes]:
            try:
                log = open(path, "rb")  # noqa: SIM115 - closed when the blocks are read
            except FileNotFoundError:
                return
            with log:
                while block := log.read(_BLOCK_BYTES):
                    yield block

        return number, blocks()

    def detail(self, job: Job) -> dict:
        """A job as ``get`` answers it."""
        return {**job_detail(job), **self._extras(job)}

    def _summary(self, job: Job) -> dict:
        return {**job_summary(job), **self._extras(job)}

    def _extras(self, job: Job) -> dict:
        """What the panel adds to the CLI's shapes: nodes, and each attempt with the link that opens its run."""
        attempts = [{**a.to_json(), "url": self._attempt_url(job, a)} for a in job.attempts]
        return {"num_nodes": job.num_nodes, "attempts": attempts}

    def _attempt_url(self, job: Job, attempt: Attempt) -> str | None:
        if attempt.mlflow_run_id is None:
            return None
        uri = job.tracking_uri or tracking_uri()
        if uri == tracking_uri() and self.base_url is not None:
            return page_links(self.base_url, job.experiment_id or "0", attempt.mlflow_run_id).run
        if is_remote(uri):
            return uri.rstrip("/") + "/" + ui_fragment(job.experiment_id or "0", attempt.mlflow_run_id)
        return None  # another local store than this server's: its UI is not served here


def workload_file(root: Path, path: object) -> Path:
    """The file ``path`` names under the server's ``root``; SubmitError when it is no relative path to a file there
    (absolute, leaving the root through ``..`` or a link, missing)."""

    def refuse(why: str) -> SubmitError:
        shown = repr(path)[:200]
        return SubmitError(f"cannot run {shown}: {why}", [f"{shown}: {why}"])

    if not isinstance(path, str) or not path.strip() or "\0" in path:
        raise refuse('send {"path": "<the workload file, relative to the server\'s root>"}, e.g. "train/workload.yaml"')
    if Path(path).is_absolute():
        raise refuse("the path must be relative to the server's root (as JupyterLab's file browser names it)")
    base = root.resolve()
    target = (base / path).resolve()
    if not target.is_relative_to(base):
        raise refuse("the path leaves the server's root")
    if not target.is_file():
        raise refuse("no such file under the server's root")
    return target
