"""One table answers every error of a known kind: the routes with its HTTP status, `air` with its exit status, in one
line without a traceback; an error of no kind is a bug and is not swallowed."""

from __future__ import annotations

import pytest

from jupyter_air.cli import commands, main
from jupyter_air.error_kinds import REFUSED_ELSEWHERE
from jupyter_air.home import AirHomeError, UnusableDatabase
from jupyter_air.server.model_errors import http_error
from jupyter_air.tracking.run_pages import QueryError
from jupyter_air.tracking.sharing import ShareError
from jupyter_air.workloads.jobs.errors import OutOfRange
from jupyter_air.workloads.jobs.jobs import JobNotFound, NotActive, SubmitError
from jupyter_air.workloads.schedules.schedules import ScheduleNotFound
from jupyter_air.workloads.schedules.tick import Busy
from jupyter_air.workloads.state.logs import BadOffset
from jupyter_air.workloads.state.permissions import BadGrant, Forbidden
from jupyter_air.workloads.surfaces.team_jobs import ServiceAnswer

ANSWERS = [
    (JobNotFound("no job run 'job-0'"), 404, 2),
    (OutOfRange("no attempt 3"), 404, 2),
    (ScheduleNotFound("nightly", "/home/a/.jupyter_air"), 404, 2),
    (QueryError("page_token 'x' is not one this server gave out"), 400, 2),
    (BadOffset("offset 7 is past the end"), 400, 2),
    (BadGrant("no user 'dave'"), 400, 2),
    (ShareError("no experiment 'x'", bad_input=True), 400, 2),
    (Forbidden("ask alice"), 403, 1),
    (NotActive("job-0 has ended"), 409, 1),
    (Busy("nightly has 1 job active"), 409, 1),
    (AirHomeError("AIR_HOME=/x is not a folder"), 503, 2),
    (UnusableDatabase("/x/jobs.db is damaged"), 503, 1),
    (ShareError("the tracking server answered 500"), 502, 1),
    (ServiceAnswer(404, "no job run 'job-0'"), 404, 2),
    (ServiceAnswer(409, "job-0 has ended"), 409, 1),
    (ServiceAnswer(503, "the service's jobs.db is damaged"), 503, 1),
    (ServiceAnswer(502, "the service did not answer"), 502, 1),
]


def failing(error: BaseException):
    """A command dispatcher that fails with ``error``."""

    def dispatch(args):
        raise error

    return dispatch


@pytest.mark.parametrize(("error", "http_status", "exit_status"), ANSWERS, ids=lambda v: type(v).__name__)
def test_an_error_is_answered_by_its_kind_on_the_routes_and_by_air(
    error, http_status, exit_status, monkeypatch, capsys
):
    # Given a model error of a kind, When a route meets it, Then it answers the kind's status with its message
    answer = http_error(error)
    assert (answer.status_code, answer.log_message % answer.args) == (http_status, str(error))

    # When a command of `air` meets it, Then it exits with the kind's status, saying it in one line
    monkeypatch.setattr(commands, "dispatch", failing(error))
    assert main(["list"]) == exit_status
    assert capsys.readouterr().err == f"air list: error: {error}\n"


def test_a_workload_is_refused_with_every_problem_and_a_cluster_that_cannot_run_it_exits_1(monkeypatch, capsys):
    # Given a workload with two problems, When a route meets it, Then it answers 400 with both
    invalid = SubmitError("invalid workload w.yaml", ["w.yaml:2: comand: unknown", "w.yaml:3: image: unknown"])
    assert (http_error(invalid).status_code, http_error(invalid).errors) == (400, invalid.problems)
    # And `air` exits 2 for it, 1 for a valid workload a cluster cannot run
    down = "ray://127.0.0.1:1 does not answer"
    unreachable = SubmitError(down, [down], kind=REFUSED_ELSEWHERE)
    for error, status in ((invalid, 2), (unreachable, 1)):
        monkeypatch.setattr(commands, "dispatch", failing(error))
        assert main(["list"]) == status


def test_an_error_of_no_kind_is_a_bug_and_is_not_swallowed(monkeypatch):
    # Given a command that fails with an error no kind names, When `air` runs it, Then its traceback goes on
    monkeypatch.setattr(commands, "dispatch", failing(IndexError("list index out of range")))
    assert http_error(IndexError("list index out of range")) is None
    with pytest.raises(IndexError):
        main(["list"])
