"""The extension's base handler (query arguments checked, errors answered as JSON, the GPU service) and its small
routes: the GPU history and refresh, idle holders, held nodes' release, the version, a run's or experiment's page in
the MLflow UI, a run's Stop, and the generic proxy route while it is off. The panels' routes are in
:mod:`~jupyter_air.server.panel_handlers`."""

from __future__ import annotations

import json

import tornado.web
from jupyter_server.base.handlers import APIHandler, JupyterHandler
from tornado.ioloop import IOLoop

from jupyter_air.workloads.file.limits import MAX_FILE_BYTES
from jupyter_air.workloads.jobs.attempt_runs import cancel_remote_call

from .. import __version__
from ..cluster.held import request_release
from ..format import byte_size
from ..gpu.cluster import NoSuchNode
from ..gpu.service import GpuService
from ..home import AirHomeError, UnusableDatabase
from ..tracking.links import run_page, ui_target
from ..tracking.stops import PartOfJob, request_stop
from .model_errors import error_body

#: The latest time a query may name (epoch ms, the end of 9999): later ones overflow the stores' integers.
MAX_EPOCH_MS = 253_402_300_799_999
#: Largest JSON body a route reads: a workload sent to the team's job service (at most MAX_FILE_BYTES of YAML) fits,
#: JSON escapes (at most 3 bytes for 1 of valid YAML text) included.
MAX_BODY_BYTES = 3 * MAX_FILE_BYTES + 64_000


class QueryArguments:
    """Query arguments and a JSON body of a Tornado handler, checked, and errors answered as ``{"message": ...}``
    JSON."""

    def write_error(self, status_code: int, **kwargs) -> None:
        body = error_body(kwargs.get("exc_info", (None, None, None))[1])
        if body is None:
            super().write_error(status_code, **kwargs)
            return
        self.set_header("Content-Type", "application/json")
        self.finish(body)

    def json_object(self) -> dict:
        """The request's JSON body as an object; ``{}`` when it is missing or not one; 413 over MAX_BODY_BYTES."""
        if (size := len(self.request.body or b"")) > MAX_BODY_BYTES:
            raise tornado.web.HTTPError(
                413,
                "The request body is %s (%d bytes); at most %s (%d bytes) is read: a workload file may be at most %s.",
                byte_size(size),
                size,
                byte_size(MAX_BODY_BYTES),
                MAX_BODY_BYTES,
                byte_size(MAX_FILE_BYTES),
            )
        try:
            body = json.loads(self.request.body or b"null")
        except ValueError:
            body = None
        return body if isinstance(body, dict) else {}

    def int_argument(
        self, name: str, default: int | None, minimum: int, maximum: int | None = None, accepted: str | None = None
    ) -> int | None:
        """Query argument ``name`` as an integer in range, ``default`` when absent; 400 saying what is accepted
        (``accepted``, or the range) otherwise."""
        value = self.get_query_argument(name, None)
        if value is None or value == "":
            return default
        try:
            parsed = int(value)
        except ValueError:
            parsed = None
        if parsed is None or parsed < minimum or (maximum is not None and parsed > maximum):
            if accepted is None:
                within = f"from {minimum} to {maximum}" if maximum is not None else f"of at least {minimum}"
                accepted = f"an integer {within}"
            raise tornado.web.HTTPError(400, "Query parameter %r must be %s; got %r.", name, accepted, value[:100])
        return parsed

    def epoch_ms_argument(self, name: str) -> int | None:
        """Query argument ``name`` as epoch milliseconds, None when absent; 400 with how to fix it otherwise."""
        accepted = (
            f"a non-negative integer epoch time in milliseconds, at most {MAX_EPOCH_MS} (the end of the year 9999), "
            f"e.g. {name}=1764420000000"
        )
        return self.int_argument(name, None, 0, MAX_EPOCH_MS, accepted)


class BaseHandler(QueryArguments, APIHandler):
    """The extension's API handlers: query arguments and errors as JSON, and the GPU service."""

    @property
    def gpu(self) -> GpuService:
        return self.settings["jupyter_air_gpu"]

    def since(self) -> int | None:
        return self.epoch_ms_argument("since")

    def node(self) -> str | None:
        """The ``node`` query argument (a Ray node id of the cluster), None when absent."""
        return self.get_query_argument("node", None) or None

    async def answer(self, ask) -> None:
        """Answer with ``await ask(since, node)``; a node the server does not know is a 404 saying which it knows."""
        try:
            payload = await ask(self.since(), self.node())
        except NoSuchNode as exc:
            raise tornado.web.HTTPError(404, "%s", str(exc)) from None
        self.finish(json.dumps(payload))


class GpuHandler(BaseHandler):
    """``GET gpu[?since=][&node=]``: the GPU history the server holds, columnar; with ``since``, only the newer
    samples; with ``node``, that Ray node's."""

    @tornado.web.authenticated
    async def get(self) -> None:
        await self.answer(self.gpu.snapshot)


class GpuRefreshHandler(BaseHandler):
    """``POST gpu/refresh[?since=][&node=]``: take a sample now (resuming sampling after idleness), answered like
    ``GET gpu``."""

    @tornado.web.authenticated
    async def post(self) -> None:
        await self.answer(self.gpu.refresh)


class IdleHoldersHandler(BaseHandler):
    """``GET gpu/idle-holders``: the kernels of this server sitting idle on GPU memory, as the last idle-holder
    check found them (``c.JupyterAir.idle_holder_minutes``); reading it never resumes GPU sampling."""

    @tornado.web.authenticated
    async def get(self) -> None:
        self.finish(json.dumps(await self.gpu.idle()))


class HeldNodesReleaseHandler(BaseHandler):
    """``POST gpu/held-nodes/<pid>/release``: ask the process (a notebook's kernel) that keeps Ray nodes for its
    next call to free them now, as ``release_nodes()`` in it would; it does within a second, busy or not. 404 when
    that process keeps no nodes."""

    @tornado.web.authenticated
    async def post(self, pid: str) -> None:
        if not await IOLoop.current().run_in_executor(None, request_release, int(pid)):
            raise tornado.web.HTTPError(
                404, "Process %s keeps no Ray nodes (they were freed, or it is gone): nothing to release.", pid
            )
        self.finish(json.dumps({"pid": int(pid), "release_requested": True}))


class VersionHandler(BaseHandler):
    """``GET version``: the server extension's version, so the panel can tell "server extension missing" from "no
    GPU", and a server not restarted after an upgrade."""

    @tornado.web.authenticated
    def get(self) -> None:
        self.finish(json.dumps({"version": __version__}))


class RunOpenHandler(JupyterHandler):
    """``GET jupyter-air/runs/<run_id>/open``: redirects to the run's page in the MLflow UI.

    A page, not an API: without a session it goes through Jupyter's login and comes back here (a link
    with a ``#`` fragment would lose it on the way).
    """

    @tornado.web.authenticated
    async def get(self, run_id: str) -> None:
        try:
            target = await IOLoop.current().run_in_executor(None, run_page, self.base_url, run_id)
        except (UnusableDatabase, AirHomeError) as err:
            raise tornado.web.HTTPError(503, "%s", str(err)) from None
        if target is None:
            raise tornado.web.HTTPError(404, f"No MLflow run {run_id} in this server's tracking store.")
        self.redirect(target)


class ExperimentOpenHandler(JupyterHandler):
    """``GET jupyter-air/experiments/<experiment_id>/open``: redirects to the experiment in the MLflow UI."""

    @tornado.web.authenticated
    def get(self, experiment_id: str) -> None:
        self.redirect(ui_target(self.base_url, experiment_id))


class RunStopHandler(BaseHandler):
    """``POST jupyter-air/runs/<run_id>/stop``: ask the kernel (or script) running the run to stop it.

    The request is recorded for the running process to see (it never waits for a busy kernel); the run
    then ends KILLED with every worker stopped; a remote call's run (``remote=True``) stops by canceling its job.
    409 when no live process of this user runs it, or when it runs in an attempt of an ``air`` job (cancel the job
    instead, or it would retry).
    """

    @tornado.web.authenticated
    async def post(self, run_id: str) -> None:
        try:
            requested = await IOLoop.current().run_in_executor(None, request_stop, run_id)
        except ValueError as exc:
            raise tornado.web.HTTPError(400, "%s", str(exc)) from None
        except PartOfJob as exc:
            raise tornado.web.HTTPError(409, "%s", str(exc)) from None
        if not requested:  # a remote call's card: its job is what stops
            requested = await IOLoop.current().run_in_executor(None, cancel_remote_call, run_id)
        if not requested:
            raise tornado.web.HTTPError(
                409,
                "Run %s is not running in a kernel or script of this server's user on this machine (it has "
                "ended, or runs elsewhere): there is nothing to stop.",
                run_id,
            )
        self.finish(json.dumps({"run_id": run_id, "stop_requested": True}))


class ProxyRouteOffHandler(BaseHandler):
    """Answers jupyter-server-proxy's generic ``/proxy/<port>/`` route while it is turned off."""

    MESSAGE = (
        "The generic /proxy/<port>/ route of jupyter-server-proxy is turned off by jupyter_air: it reaches any "
        "local port and skips Jupyter's origin check. Set c.JupyterAir.allow_proxy_route = True in "
        "jupyter_server_config.py to turn it on."
    )

    def _refuse(self, *args) -> None:
        self.set_status(404)
        self.finish(json.dumps({"message": self.MESSAGE}))

    get = post = put = delete = patch = head = options = tornado.web.authenticated(_refuse)
