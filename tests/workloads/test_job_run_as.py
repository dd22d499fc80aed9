"""The team's job service with ``AIR_JOBS_RUN_AS=owner`` (running as root): each job's command runs as the local
account named like its owner, without the service's credentials, and cannot read the service's job store. A hub
user with no local account is refused before anything is created."""

from __future__ import annotations

import shutil
import tempfile
import time
from pathlib import Path

import pytest
from workload_helpers import write_workload

from jupyter_air.workloads.jobs import Jobs, SubmitError
from jupyter_air.workloads.permissions import Caller

pytestmark = pytest.mark.skipif(shutil.which("runuser") is None or __import__("os").geteuid() != 0, reason="needs root")

PROBE = (
    'echo "as $(id -un) home=$HOME token=${MLFLOW_TRACKING_TOKEN:-none} hub=${JUPYTERHUB_API_TOKEN:-none}"; '
    'cat "$AIR_HOME/jobs.db" > /dev/null 2>&1 && echo "read the job store" || echo "job store closed"'
)


@pytest.fixture
def team_service(tracking_uri, monkeypatch):
    """A job service's environment: AIR_HOME (0700) in a folder other users may enter, its credentials set."""
    folder = Path(tempfile.mkdtemp(prefix="air-run-as-"))
    folder.chmod(0o755)
    monkeypatch.setenv("AIR_HOME", str(folder / "air"))
    monkeypatch.setenv("MLFLOW_TRACKING_URI", tracking_uri)
    monkeypatch.setenv("AIR_JOBS_RUN_AS", "owner")
    monkeypatch.setenv("MLFLOW_TRACKING_TOKEN", "the-services-mlflow-token")
    monkeypatch.setenv("JUPYTERHUB_API_TOKEN", "the-services-hub-token")
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def finished(jobs: Jobs, job_run_id: str, timeout: float = 90):
    """The job once it has ended (a bounded wait, not a speed assertion)."""
    deadline = time.monotonic() + timeout
    while (job := jobs.get(job_run_id)).active:
        assert time.monotonic() < deadline, job
        time.sleep(0.2)
    return job


def test_a_team_job_runs_as_its_owner_without_the_services_credentials(team_service):
    # Given the service, and hub user nobody's workload in a folder nobody may enter
    jobs = Jobs(team_service / "air", Caller("nobody"))
    path = write_workload(team_service, experiment_name="air-tests-run-as", command=PROBE)

    # When nobody submits it
    job = finished(jobs, jobs.submit_file(path).job_run_id)

    # Then the job is nobody's and its command ran as nobody, with neither of the service's tokens, unable to read
    # the job store; its log (written by the service) says so
    assert (job.user, job.status) == ("nobody", "SUCCEEDED"), job.error
    assert jobs.logs(job.job_run_id)["text"] == "as nobody home=/nonexistent token=none hub=none\njob store closed\n"


def test_a_hub_user_without_a_local_account_is_refused_and_nothing_is_created(team_service):
    # Given hub user alice, who has no account on this machine
    jobs = Jobs(team_service / "air", Caller("alice"))
    path = write_workload(team_service, experiment_name="air-tests-run-as", command="true")

    # When she submits, Then she is told why and what the admins do, and no job exists
    with pytest.raises(SubmitError) as refused:
        jobs.submit_file(path)
    assert "no local account 'alice' to run the job as (AIR_JOBS_RUN_AS=owner)" in str(refused.value.problems)
    assert Jobs(team_service / "air").list(active_only=False) == []
