"""``air-jobs``: the team's job service, started by JupyterHub (``c.JupyterHub.services``). It keeps the team's job
store (its ``AIR_HOME``), runs the jobs users send it (each the sender's, checked as ``air run`` checks a file, its
experiment checked as the sender: ``submissions``), fires the schedules in its store, keeps the jobs' logs, and
answers the jobs routes of the Experiment panel for whoever calls with a hub token, as that user: what they see,
read and do is what their job permissions allow. A user without the level an action needs gets 403 with the
message that names the job and whom to ask.

    python -m jupyter_air.team.service     # as the hub runs it: JUPYTERHUB_* variables and AIR_HOME set

It listens where ``$JUPYTERHUB_SERVICE_URL`` says (the hub's proxy reaches it at ``/services/air-jobs/``); every
request needs a hub token with ``access:services!service=air-jobs``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from urllib.parse import urlsplit

import tornado.web
from jupyterhub.services.auth import HubAuth, HubAuthenticated

from jupyter_air.home import air_home
from jupyter_air.server.handlers import QueryArguments
from jupyter_air.server.model_errors import call_model
from jupyter_air.server.tasks import JobChecks
from jupyter_air.workloads.supervisor.run_as import RUN_AS_ENV
from jupyter_air.workloads.supervisor.run_logs import LOGS_ENV
from jupyter_air.workloads.supervisor.service_secrets import SERVICE_ENV, SecretsError, load_service_secrets
from jupyter_air.workloads.surfaces.jobs_view import DEFAULT_LIMIT, MAX_LIMIT, JobsView
from jupyter_air.workloads.surfaces.schedules_view import SchedulesView

from .environ import CredentialsInEnvironment, check_no_credentials, forget
from .gpu_claims import TeamGpus
from .hub import HubDirectory, caller_of
from .submissions import submit_sent

#: Seconds between two checks of the team's jobs (dead supervisors reaped, due schedules fired).
CHECK_SECONDS = 5.0
#: Logged at the start when every job runs as the service's own account.
SHARED_ACCOUNT = (
    f"{RUN_AS_ENV} is not 'owner': every job runs as this service's account, and can read what it can: the job "
    "store (every user's workloads, env_variables and logs) and its secrets file. Fit for one trusted team only; "
    f"run the service as root with {RUN_AS_ENV}=owner to run each job as its owner's account"
)


class ServiceHandler(HubAuthenticated, QueryArguments, tornado.web.RequestHandler):
    """A jobs route answered for the hub user who calls, with the job store and the hub's directory."""

    def initialize(self, jobs: JobsView) -> None:
        self.jobs = jobs

    @property
    def view(self) -> JobsView:
        return self.jobs.as_caller(caller_of(self.current_user), self.hub_auth.get_token(self))

    async def answer(self, function, *args) -> None:
        self.set_header("Content-Type", "application/json")
        self.finish(json.dumps(await call_model(function, *args)))


class JobsHandler(ServiceHandler):
    """``GET jobs[?limit=&schedule=]``: the jobs the caller may see (those a schedule fired), newest first.
    ``POST jobs`` ``{"workload", "path", "label", "overrides"}``: run the workload (its YAML, the absolute path it
    was read from, `air run`'s ``--override`` items) as the caller's job (201), or keep it as their schedule when it
    has a ``schedule:``."""

    @tornado.web.authenticated
    async def get(self) -> None:
        limit = self.int_argument("limit", DEFAULT_LIMIT, 1, MAX_LIMIT)
        await self.answer(self.view.list, limit, self.get_query_argument("schedule", None))

    @tornado.web.authenticated
    async def post(self) -> None:
        self.set_status(201)
        await self.answer(submit_sent, self.view, self.json_object())


class JobHandler(ServiceHandler):
    """``GET jobs/<id>``: one job (CAN_VIEW)."""

    @tornado.web.authenticated
    async def get(self, job_run_id: str) -> None:
        await self.answer(self.view.get, job_run_id)


class JobLogsHandler(ServiceHandler):
    """``GET jobs/<id>/logs?attempt=&node=&offset=``: the log from a byte offset (CAN_VIEW)."""

    @tornado.web.authenticated
    async def get(self, job_run_id: str) -> None:
        where = [self.int_argument("attempt", -1, -1), self.int_argument("node", 0, 0)]
        await self.answer(self.view.logs, job_run_id, *where, self.int_argument("offset", 0, 0))


class JobCancelHandler(ServiceHandler):
    """``POST jobs/<id>/cancel`` (CAN_MANAGE_RUN)."""

    @tornado.web.authenticated
    async def post(self, job_run_id: str) -> None:
        await self.answer(self.view.cancel, job_run_id)


class JobPermissionsHandler(ServiceHandler):
    """``GET jobs/<id>/permissions`` (CAN_VIEW); ``PUT`` ``{"user" | "group", "level"}`` (CAN_MANAGE); ``<id>``: a job
    run id or a schedule's name."""

    @tornado.web.authenticated
    async def get(self, job_run_id: str) -> None:
        await self.answer(self.view.permissions, job_run_id)

    @tornado.web.authenticated
    async def put(self, job_run_id: str) -> None:
        body = self.json_object()
        await self.answer(self.view.grant, job_run_id, body.get("user"), body.get("group"), body.get("level"))


class SchedulesHandler(ServiceHandler):
    """``GET schedules``: the schedules the caller may see, each with its last fire and that fire's job."""

    @tornado.web.authenticated
    async def get(self) -> None:
        await self.answer(SchedulesView(self.view).list)


class ScheduleHandler(ServiceHandler):
    """``GET schedules/<name>`` (CAN_VIEW); ``DELETE`` (CAN_MANAGE): its jobs go on."""

    @tornado.web.authenticated
    async def get(self, name: str) -> None:
        await self.answer(SchedulesView(self.view).get, name)

    @tornado.web.authenticated
    async def delete(self, name: str) -> None:
        await self.answer(SchedulesView(self.view).delete, name)


class ScheduleActionHandler(ServiceHandler):
    """``POST schedules/<name>/pause``, ``.../resume`` (CAN_MANAGE), ``.../run-now`` (CAN_MANAGE_RUN: a job of the
    schedule's owner, run as them)."""

    @tornado.web.authenticated
    async def post(self, name: str, action: str) -> None:
        view = SchedulesView(self.view)
        await self.answer({"pause": view.pause, "resume": view.resume, "run-now": view.run_now}[action], name)


class GpuClaimsHandler(ServiceHandler):
    """``POST gpus/claims`` ``{"claim_id", "label", "count", "indexes", "pid"}``: the caller's notebook call queued
    for, or given, GPUs of the team's ledger: ``{"gpus", "position", "reason"}``; asked again until it has them."""

    @tornado.web.authenticated
    async def post(self) -> None:
        await self.answer(TeamGpus(self.jobs.jobs.store).claim, self.current_user["name"], self.json_object())


class GpuQueueHandler(ServiceHandler):
    """``GET gpus/queue``: the team's GPU ledger as `air queue -o json` prints it, for every hub user."""

    @tornado.web.authenticated
    async def get(self) -> None:
        await self.answer(TeamGpus(self.jobs.jobs.store).queue)


class GpuClaimHandler(ServiceHandler):
    """``DELETE gpus/claims/<id>``: the caller's claim ended, its GPUs to the next in line."""

    @tornado.web.authenticated
    async def delete(self, claim_id: str) -> None:
        await self.answer(TeamGpus(self.jobs.jobs.store).release, self.current_user["name"], claim_id)


def make_app(prefix: str, home: Path, directory: HubDirectory) -> tornado.web.Application:
    """The service's routes under ``prefix`` (``/services/air-jobs/``), on the job store under ``home`` (created
    if missing)."""
    jobs = JobsView(home, None, directory=directory)
    jobs.jobs.create()
    options = {"jobs": jobs}
    routes = [
        (r"jobs", JobsHandler),
        (r"jobs/([^/]+)", JobHandler),
        (r"jobs/([^/]+)/logs", JobLogsHandler),
        (r"jobs/([^/]+)/cancel", JobCancelHandler),
        (r"jobs/([^/]+)/permissions", JobPermissionsHandler),
        (r"schedules", SchedulesHandler),
        (r"schedules/([^/]+)", ScheduleHandler),
        (r"schedules/([^/]+)/(pause|resume|run-now)", ScheduleActionHandler),
        (r"gpus/queue", GpuQueueHandler),
        (r"gpus/claims", GpuClaimsHandler),
        (r"gpus/claims/([^/]+)", GpuClaimHandler),
    ]
    return tornado.web.Application([(prefix + pattern, handler, options) for pattern, handler in routes])


def main() -> None:
    """Serve until JupyterHub stops the service (SIGTERM or SIGINT). Its credentials stay in its memory: the hub's
    token is wiped from its environment, its MLflow and Ray credentials come from ``AIR_JOBS_SECRETS_FILE``."""
    import asyncio
    import logging
    import signal

    logging.basicConfig(level=logging.INFO)
    log = logging.getLogger("air-jobs")
    try:
        check_no_credentials(os.environ)
        token = forget(("JUPYTERHUB_API_TOKEN", "JPY_API_TOKEN"))["JUPYTERHUB_API_TOKEN"]  # in memory only
        HubAuth.instance(api_token=token)  # the one every handler uses
        os.environ.update({SERVICE_ENV: "1", LOGS_ENV: "service"})  # its supervisors: logs kept here, no secrets
        load_service_secrets()
    except (CredentialsInEnvironment, SecretsError) as err:
        raise SystemExit(f"air-jobs cannot start: {err}") from None
    if os.environ.get(RUN_AS_ENV) != "owner":
        log.warning(SHARED_ACCOUNT)
    home = air_home(os.environ)
    directory = HubDirectory(os.environ["JUPYTERHUB_API_URL"], token)
    url = urlsplit(os.environ["JUPYTERHUB_SERVICE_URL"])

    async def serve() -> None:
        stop = asyncio.Event()
        for number in (signal.SIGTERM, signal.SIGINT):
            asyncio.get_running_loop().add_signal_handler(number, stop.set)
        server = make_app(os.environ["JUPYTERHUB_SERVICE_PREFIX"], home, directory).listen(
            url.port, address=url.hostname
        )
        checks = JobChecks(CHECK_SECONDS, log)  # reaps jobs, fires due schedules
        checks.start()
        await stop.wait()
        server.stop()
        checks.stop()

    asyncio.run(serve())


if __name__ == "__main__":
    main()
