"""Thin authenticated handlers of the Experiment panel's routes: runs, `air` jobs (submit, read, cancel), their logs
and permissions, schedules (read, pause, resume, run now), sharing an experiment, GPU use.

MLflow and SQLite are read in the executor, never on the event loop; the models know nothing of HTTP.
"""

from __future__ import annotations

import json
import os
import posixpath
import time
from pathlib import Path

import tornado.web

from jupyter_air.workloads.surfaces import jobs_view
from jupyter_air.workloads.surfaces.jobs_view import JobsView
from jupyter_air.workloads.surfaces.protocols import JobsSurface, SchedulesSurface
from jupyter_air.workloads.surfaces.schedules_view import SchedulesView

from ..home import air_home_path
from ..tracking import runs_query, usage
from ..tracking.answers import store_uri
from ..tracking.runs_query import RunsQuery
from ..tracking.sharing import availability, share
from .handlers import BaseHandler
from .model_errors import Refused, call_model


class PanelHandler(BaseHandler):
    """Shared parsing, and the run and job models: each made by the first request that needs it, one per server,
    never per request."""

    def _once(self, key: str, make):
        model = self.settings.get(key)
        if model is None:
            model = self.settings[key] = make()
        return model

    @property
    def runs(self) -> RunsQuery:
        """The server's one ``RunsQuery``, which keeps the answers."""
        return self._once("jupyter_air_runs", lambda: RunsQuery(self.base_url))

    @property
    def local_jobs(self) -> JobsView:
        """The jobs under AIR_HOME (and the schedules that fire them)."""
        return self._once("jupyter_air_local_jobs", lambda: JobsView(air_home_path(), self.base_url))

    @property
    def jobs(self) -> JobsSurface:
        """The team's job service (``ServiceJobs``) when ``c.JupyterAir.jobs_service_url`` names one, else the jobs
        under AIR_HOME."""
        return self.settings.get("jupyter_air_jobs") or self.local_jobs

    @property
    def schedules(self) -> SchedulesSurface:
        """The team's job service's schedules when it answers the jobs, else those under AIR_HOME."""
        service = self.settings.get("jupyter_air_jobs")
        if service:
            return service.schedules
        return self._once("jupyter_air_schedules", lambda: SchedulesView(self.local_jobs))

    async def call(self, function, *args):
        """Run a model call in the executor; its errors are answered as ``model_errors.http_error`` maps them."""
        return await call_model(function, *args)


class RunsHandler(PanelHandler):
    """``GET runs?notebook=<path>[&since=&limit=&page_token=]``, or ``GET runs?from=<ms>&to=<ms>[&node=]`` (the
    runs of the node named by its hostname, as runs name it; default: this server's)."""

    @tornado.web.authenticated
    async def get(self) -> None:
        notebook = self.get_query_argument("notebook", None)
        from_ms, to_ms = self.epoch_ms_argument("from"), self.epoch_ms_argument("to")
        if notebook and from_ms is None and to_ms is None:
            limit = self.int_argument("limit", runs_query.DEFAULT_LIMIT, 1, runs_query.MAX_LIMIT)
            query = (self._paths(notebook), self.since(), limit, self.get_query_argument("page_token", None))
            answer = self.runs.notebook(*query, wait=False) or await self.call(self.runs.notebook, *query)
        elif from_ms is not None and to_ms is not None and not notebook:
            if from_ms > to_ms:
                raise tornado.web.HTTPError(
                    400, "from=%d is after to=%d: give the earlier time as from.", from_ms, to_ms
                )
            window = (from_ms, to_ms, self.get_query_argument("node", None) or None)
            answer = self.runs.window(*window, wait=False) or await self.call(self.runs.window, *window)
        else:
            raise tornado.web.HTTPError(
                400,
                "Pass notebook=<the notebook's path, e.g. work/train.ipynb> for a notebook's runs, or "
                "from=<epoch ms>&to=<epoch ms>[&node=<hostname>] for the runs active on this node (or that one) in "
                "that window (not both).",
            )
        self.finish(json.dumps(answer))

    def _paths(self, notebook: str) -> list[str]:
        """The notebook's contents path and its path on disk: a kernel records the one Jupyter gives it
        (``JPY_SESSION_NAME``, on disk for JupyterLab's sessions)."""
        path = notebook.strip("/")
        paths = [path]
        try:
            folder = self.kernel_manager.cwd_for_path(path)
            paths.append(os.path.join(folder, posixpath.basename(path)))
        except Exception as exc:  # noqa: BLE001 - a contents manager without disk paths: the contents path only
            self.log.debug("jupyter_air: no disk path for %r: %s", path, exc)
        return paths


class UsageHandler(PanelHandler):
    """``GET usage[?by=user|experiment|day&from=<ms>&to=<ms>]``: what ``air usage -o json`` prints, from the server's
    tracking store at the prices of its ``AIR_GPU_HOUR_PRICE`` and ``AIR_KWH_PRICE`` (default: the last 7 days, by
    user)."""

    @tornado.web.authenticated
    async def get(self) -> None:
        to_ms = self.epoch_ms_argument("to")
        to_ms = int(time.time() * 1000) if to_ms is None else to_ms
        from_ms = self.epoch_ms_argument("from")
        window = (to_ms - usage.DEFAULT_WINDOW_MS if from_ms is None else from_ms, to_ms)
        by = self.get_query_argument("by", "user")
        self.finish(json.dumps(await self.call(usage.store_usage, by, *window, None, store_uri())))


class GpuQueueHandler(PanelHandler):
    """``GET gpu/queue``: what ``air queue -o json`` prints for AIR_HOME's GPU ledger (the team's job service's when
    it answers the jobs): ``held`` (each claim's GPUs, since when) and ``queued`` (in the order they will start, each
    with its place and reason)."""

    @tornado.web.authenticated
    async def get(self) -> None:
        service = self.settings.get("jupyter_air_jobs")
        self.finish(json.dumps(await self.call(service.gpu_queue if service else self.local_jobs.jobs.gpu_queue)))


class ExperimentShareHandler(PanelHandler):
    """``GET experiments/share``: whether experiments can be shared from here (``{"available", "server",
    "reason"}``). ``POST`` ``{"experiment", "user", "level"}``: give ``user`` READ, EDIT or MANAGE on the
    experiment, or take their grant back (``level`` null), with this server's MLflow credentials."""

    @tornado.web.authenticated
    async def get(self) -> None:
        self.finish(json.dumps(availability()))

    @tornado.web.authenticated
    async def post(self) -> None:
        import dataclasses

        body = self.json_object()
        grant = await self.call(share, body.get("experiment"), body.get("user"), body.get("level"))
        self.finish(json.dumps(dataclasses.asdict(grant)))


class JobsHandler(PanelHandler):
    """``GET jobs[?limit=&schedule=]``: every `air` job run (or those a schedule fired), newest first. ``POST jobs``
    ``{"path": "<file>.yaml"}``: submit the workload file at that path under the server's root, as ``air run -f``
    does (201 with the new job)."""

    @tornado.web.authenticated
    async def get(self) -> None:
        limit = self.int_argument("limit", jobs_view.DEFAULT_LIMIT, 1, jobs_view.MAX_LIMIT)
        self.finish(json.dumps(await self.call(self.jobs.list, limit, self.get_query_argument("schedule", None))))

    @tornado.web.authenticated
    async def post(self) -> None:
        path = self.json_object().get("path")
        if isinstance(path, str) and await self._hidden(path):
            why = "it is hidden, and this server does not show hidden files (ContentsManager.allow_hidden)"
            raise Refused(f"cannot run {path!r}: {why}", [f"{path!r}: {why}"])
        root = Path(self.settings["server_root_dir"])
        job = await self.call(self.jobs.submit, root, path)
        self.set_status(201)
        self.finish(json.dumps(job))

    async def _hidden(self, path: str) -> bool:
        """Whether the contents manager hides ``path`` from this server's users (a path outside the root is the
        model's to refuse)."""
        from jupyter_server.utils import ensure_async

        manager = self.contents_manager
        try:
            return not manager.allow_hidden and await ensure_async(manager.is_hidden(path))
        except tornado.web.HTTPError:
            return False


class JobHandler(PanelHandler):
    """``GET jobs/<id>``: what ``air get -o json`` prints."""

    @tornado.web.authenticated
    async def get(self, job_run_id: str) -> None:
        self.finish(json.dumps(await self.call(self.jobs.get, job_run_id)))


class JobCancelHandler(PanelHandler):
    """``POST jobs/<id>/cancel``: stop the job; answers its summary once it has ended."""

    @tornado.web.authenticated
    async def post(self, job_run_id: str) -> None:
        self.finish(json.dumps(await self.call(self.jobs.cancel, job_run_id)))


class JobPermissionsHandler(PanelHandler):
    """``GET jobs/<id>/permissions``: the job's owner, its grants and the caller's level, as ``air permissions -o
    json`` prints them. ``PUT`` ``{"user": U, "level": L}`` (or ``"group"``; ``level`` null takes it back): what
    ``air permissions --user U --level L`` does, answered with the listing and ``experiment_grant``."""

    @tornado.web.authenticated
    async def get(self, job_run_id: str) -> None:
        self.finish(json.dumps(await self.call(self.jobs.permissions, job_run_id)))

    @tornado.web.authenticated
    async def put(self, job_run_id: str) -> None:
        body = self.json_object()
        who = (body.get("user"), body.get("group"), body.get("level"))
        self.finish(json.dumps(await self.call(self.jobs.grant, job_run_id, *who)))


class JobLogsHandler(PanelHandler):
    """``GET jobs/<id>/logs?attempt=&node=&offset=``: the log from a byte offset and the next offset."""

    @tornado.web.authenticated
    async def get(self, job_run_id: str) -> None:
        attempt = self.int_argument("attempt", -1, -1)
        node = self.int_argument("node", 0, 0)
        offset = self.int_argument("offset", 0, 0)
        self.finish(json.dumps(await self.call(self.jobs.logs, job_run_id, attempt, node, offset)))


class JobLogDownloadHandler(PanelHandler):
    """``GET jobs/<id>/logs/download?attempt=&node=``: the whole log file, as an attachment."""

    @tornado.web.authenticated
    async def get(self, job_run_id: str) -> None:
        attempt = self.int_argument("attempt", -1, -1)
        node = self.int_argument("node", 0, 0)
        number, blocks = await self.call(self.jobs.log_blocks, job_run_id, attempt, node)
        name = f"{job_run_id}-attempt_{number}-node_{node}.log"
        self.set_header("Content-Type", "text/plain; charset=utf-8")
        self.set_header("Content-Disposition", f'attachment; filename="{name}"')
        while block := await self.call(next, blocks, b""):
            self.write(block)
            await self.flush()
        self.finish()


class SchedulesHandler(PanelHandler):
    """``GET schedules``: every schedule as ``air schedules list -o json`` shows it, with its last fire and that
    fire's job as ``GET jobs/<id>`` shows it."""

    @tornado.web.authenticated
    async def get(self) -> None:
        self.finish(json.dumps(await self.call(self.schedules.list)))


class ScheduleActionHandler(PanelHandler):
    """``POST schedules/<name>/pause``, ``.../resume`` (the schedule), ``.../run-now`` (the fire and its job)."""

    @tornado.web.authenticated
    async def post(self, name: str, action: str) -> None:
        view = self.schedules
        act = {"pause": view.pause, "resume": view.resume, "run-now": view.run_now}[action]
        self.finish(json.dumps(await self.call(act, name)))
