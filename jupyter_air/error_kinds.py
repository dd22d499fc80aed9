"""The kinds of error jupyter_air's models raise, each with how it is answered: the HTTP status of the Jupyter
server's and the team service's routes, and the exit status of `air`. An error class names its kind (its ``kind``
attribute); the handlers and the command line read it from there, and the reference pages' tables are generated
from :data:`KINDS`."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ErrorKind:
    """One kind of error: what it means to the user, its HTTP status, and the exit status of `air`."""

    name: str
    meaning: str
    http_status: int
    exit_status: int


BAD_INPUT = ErrorKind(
    "bad input",
    "a workload file, an override, an option, a query argument or a grant that cannot be used; the message says "
    "what to give instead",
    400,
    2,
)
NOT_FOUND = ErrorKind(
    "not found", "a job run, an attempt, a node or a schedule that does not exist; the message names what does", 404, 2
)
FORBIDDEN = ErrorKind("forbidden", "a job permission you do not have; the message says whom to ask", 403, 1)
CONFLICT = ErrorKind(
    "conflict",
    "a job that has already ended, a schedule at its max_concurrent_runs, an attempt that has not started yet",
    409,
    1,
)
UNUSABLE_HOME = ErrorKind(
    "unusable AIR_HOME",
    "an AIR_HOME that is not a folder, or that another user could change; the message says how to fix it",
    503,
    2,
)
UNUSABLE_STATE = ErrorKind(
    "unusable state", "a damaged job database or MLflow store, or a full disk; the message names the file", 503, 1
)
REFUSED_ELSEWHERE = ErrorKind(
    "refused elsewhere",
    "the tracking server, the team's job service or the Ray cluster refused the request or did not answer; the "
    "message gives its words",
    502,
    1,
)
#: Exit status of `air` interrupted (Ctrl-C; a job it submitted keeps running).
INTERRUPTED = 130
#: Exit status of `air` whose reader went away (``air logs ... | head``): it stops quietly, as other tools do.
BROKEN_PIPE = 141
#: Every kind, in the order the reference pages list them.
KINDS = (BAD_INPUT, NOT_FOUND, FORBIDDEN, CONFLICT, UNUSABLE_HOME, UNUSABLE_STATE, REFUSED_ELSEWHERE)


def kind_of(err: BaseException) -> ErrorKind | None:
    """The kind ``err`` names; None for an error that is a bug (answered 500, or a traceback from `air`)."""
    kind = getattr(err, "kind", None)
    return kind if isinstance(kind, ErrorKind) else None


def kind_of_status(status: int) -> ErrorKind:
    """The kind of an HTTP answer with ``status`` (the team service's, read by its clients)."""
    if status == 503:
        return UNUSABLE_STATE  # the service's own state: nothing the caller gave
    return next((k for k in KINDS if k.http_status == status), REFUSED_ELSEWHERE)
