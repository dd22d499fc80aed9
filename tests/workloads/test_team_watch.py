"""`air run --watch` against the team's job service follows every attempt and waits for the job's outcome: an
attempt's log is complete (its process has ended) before the service's supervisor records how the job ended."""

from __future__ import annotations

import pytest

from jupyter_air.cli import team_commands
from jupyter_air.workloads.surfaces.team_jobs import ServiceJobs


def attempt(number: int, status: str, error: str | None = None) -> dict:
    ended = None if status == "RUNNING" else 2000 + number
    return {"attempt": number, "status": status, "started_ms": 1000 + number, "ended_ms": ended, "error": error}


def job(status: str, *attempts: dict, error: str | None = None) -> dict:
    return {"job_run_id": "job-0123456789ab", "status": status, "attempts": list(attempts), "error": error}


class Service(ServiceJobs):
    """The service's answers in turn (the last one stays), each attempt's log whole at once."""

    def __init__(self, answers: list[dict], logs: dict[int, str]):
        self.answers, self.logs_of, self.asked = answers, logs, 0

    def get(self, job_run_id: str) -> dict:
        self.asked += 1
        return self.answers[min(self.asked, len(self.answers)) - 1]

    def logs(self, job_run_id: str, attempt: int, node: int, offset: int) -> dict:
        text = self.logs_of[attempt][offset:]
        size = len(self.logs_of[attempt])
        return {"attempt": attempt, "text": text, "next_offset": size, "size_bytes": size, "complete": True}


@pytest.fixture(autouse=True)
def no_wait(monkeypatch):
    monkeypatch.setattr(team_commands, "_FOLLOW_SECONDS", 0)


def test_a_job_still_running_when_its_only_attempt_has_ended_is_waited_for(capsys):
    # Given a job whose attempt has ended (its log complete) and whose outcome is recorded two reads later
    service = Service(
        [
            job("RUNNING", attempt(0, "RUNNING")),
            job("RUNNING", attempt(0, "SUCCEEDED")),
            job("RUNNING", attempt(0, "SUCCEEDED")),
            job("SUCCEEDED", attempt(0, "SUCCEEDED")),
        ],
        {0: "step 7\n"},
    )
    # When it is watched, Then its output is printed, then its outcome, and the exit code is 0
    assert team_commands._watch(service, "job-0123456789ab", json_lines=False) == 0
    out, err = capsys.readouterr()
    assert (out, err) == ("step 7\n", "job-0123456789ab SUCCEEDED\n")


def test_a_retried_job_shows_each_attempt_and_why_it_was_retried(capsys):
    # Given a job whose first attempt failed and whose retry failed too
    failed = attempt(0, "FAILED", "exit code 3")
    service = Service(
        [
            job("RUNNING", attempt(0, "RUNNING")),
            job("RUNNING", failed),
            job("RUNNING", failed, attempt(1, "RUNNING")),
            job("FAILED", failed, attempt(1, "FAILED", "exit code 3"), error="exit code 3"),
        ],
        {0: "try 0\n", 1: "try 1\n"},
    )
    # When it is watched, Then both attempts' output is printed, the retry and the outcome said, and the exit code is 1
    assert team_commands._watch(service, "job-0123456789ab", json_lines=False) == 1
    out, err = capsys.readouterr()
    assert out == "try 0\ntry 1\n"
    assert err == "attempt 0 FAILED: exit code 3; retry 1\njob-0123456789ab FAILED: exit code 3\n"


def test_a_job_that_ended_before_any_attempt_says_why(capsys):
    # Given a job the service refused to start (no attempt)
    service = Service([job("FAILED", error="no GPU free")], {})
    # When it is watched, Then its outcome is said and the exit code is 1
    assert team_commands._watch(service, "job-0123456789ab", json_lines=False) == 1
    assert capsys.readouterr() == ("", "job-0123456789ab FAILED: no GPU free\n")
