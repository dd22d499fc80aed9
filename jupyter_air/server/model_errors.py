"""The one mapping from the models' errors to HTTP answers, for the Jupyter server's routes and the team's job
service: lookups 404, bad input 400 (a workload with every problem in ``errors``), a missing job permission 403
saying whom to ask, a job that is not active or a schedule at its ``max_concurrent_runs`` 409, a database that
cannot be used 503 naming the file and what to do, a tracking server that refuses a grant 502 with its words, the
team's job service's refusals with its status and words."""

from __future__ import annotations

import json

import tornado.web
from tornado.ioloop import IOLoop

from ..home import AirHomeError, UnusableDatabase
from ..tracking.runs_query import QueryError
from ..tracking.sharing import ShareError
from ..workloads.jobs import JobNotFound, NotActive, OutOfRange, SubmitError
from ..workloads.logs import BadOffset
from ..workloads.permissions import BadGrant, Forbidden
from ..workloads.schedules import ScheduleNotFound
from ..workloads.tick import Busy


class Refused(tornado.web.HTTPError):
    """400 with every problem of a request listed in ``errors``."""

    def __init__(self, message: str, errors: list[str]):
        super().__init__(400, "%s", message)
        self.errors = errors


def http_error(err: BaseException) -> tornado.web.HTTPError | None:
    """The answer for a model's error; None for an error that is a bug (it stays a 500 with its traceback logged)."""
    from ..workloads.service_jobs import ServiceAnswer

    if isinstance(err, SubmitError):
        return Refused(err.args[0], err.problems)
    if isinstance(err, ServiceAnswer):
        return Refused(str(err), err.errors) if err.errors else tornado.web.HTTPError(err.status, "%s", str(err))
    status = next(
        (
            code
            for kinds, code in (
                ((JobNotFound, OutOfRange, ScheduleNotFound), 404),
                ((Forbidden,), 403),
                ((QueryError, BadOffset, BadGrant), 400),
                ((NotActive, Busy), 409),
                ((UnusableDatabase, AirHomeError), 503),
            )
            if isinstance(err, kinds)
        ),
        None,
    )
    if isinstance(err, ShareError):
        status = 400 if err.bad_input else 502
    return None if status is None else tornado.web.HTTPError(status, "%s", str(err))


def error_body(exc: BaseException | None) -> str | None:
    """The JSON of an answered error, ``{"message", "reason"}`` (and ``errors`` of a Refused); None for others."""
    if not isinstance(exc, tornado.web.HTTPError) or not exc.log_message:
        return None
    body = {"message": exc.log_message % exc.args, "reason": exc.reason}
    if isinstance(exc, Refused):
        body = {"message": body["message"], "errors": exc.errors}
    return json.dumps(body)


async def call_model(function, *args):
    """Run a blocking model call in the executor; its errors raised as :func:`http_error` answers them."""
    try:
        return await IOLoop.current().run_in_executor(None, function, *args)
    except Exception as err:
        answer = http_error(err)
        if answer is None:
            raise
        raise answer from None
