"""The models' errors as HTTP answers, for the Jupyter server's routes and the team's job service: each error
names its kind (:mod:`jupyter_air.error_kinds`: bad input 400 with every problem of a workload in ``errors``, not
found 404, a missing job permission 403 saying whom to ask, a conflict 409, an unusable AIR_HOME or database 503
naming the file and what to do, a refusal elsewhere 502 with its words); the team's job service's refusals keep its
status."""

from __future__ import annotations

import json

import tornado.web
from tornado.ioloop import IOLoop

from ..error_kinds import kind_of


class Refused(tornado.web.HTTPError):
    """400 with every problem of a request listed in ``errors``."""

    def __init__(self, message: str, errors: list[str]):
        super().__init__(400, "%s", message)
        self.errors = errors


def http_error(err: BaseException) -> tornado.web.HTTPError | None:
    """The answer for a model's error; None for an error that is a bug (it stays a 500 with its traceback logged)."""
    kind = kind_of(err)
    if kind is None:
        return None
    errors = getattr(err, "problems", None) or getattr(err, "errors", None)
    if errors:
        return Refused(str(err), errors)
    return tornado.web.HTTPError(getattr(err, "status", kind.http_status), "%s", str(err))


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
