"""Timeout, cancel and a killed supervisor: jobs end in the right state and leave no process behind."""

from __future__ import annotations

import signal

import psutil
import pytest
from workload_helpers import Air, write_workload

from jupyter_air.workloads.state.store import JobStore
from jupyter_air.workloads.supervisor.control import cancel
from jupyter_air.workloads.supervisor.run_logs import LOGS_ENV

LONG = "sleep 120 & sleep 120; echo never"
#: A job whose output holds what only those allowed to read its logs may read.
SECRET = "echo 'alice secret=hunter2'; " + LONG


@pytest.fixture(scope="module")
def airs(tmp_path_factory, tracking_uri):
    """One AIR_HOME per scenario, all started together so their supervisors start side by side; a ``kept`` one's
    logs are kept by the service (``AIR_JOB_LOGS=service``, as the team's job service runs its supervisors)."""
    made = {}
    for name, fields in {
        "timeout": {"command": LONG, "timeout_minutes": 0.04},
        "cancel": {"command": LONG},
        "cancel_all": {"command": LONG},
        "killed": {"command": LONG},
        "killed_kept": {"command": SECRET},
        "stuck_kept": {"command": SECRET},
    }.items():
        home = tmp_path_factory.mktemp(name)
        air = Air(home / "air", tracking_uri)
        if name.endswith("_kept"):
            air.env[LOGS_ENV] = "service"
        path = write_workload(home, experiment_name=f"air-tests-{name}", **fields)
        made[name] = (air, air.submit(path))
    # A tracking store that cannot be opened (its folder is a file): the supervisor itself fails.
    home = tmp_path_factory.mktemp("broken")
    (home / "not-a-folder").write_text("")
    broken = Air(home / "air", f"sqlite:///{home / 'not-a-folder' / 'mlflow.db'}")
    made["broken"] = (broken, broken.submit(write_workload(home, command="echo never")))
    yield made
    for air, _ in made.values():
        air("cancel", "--all")
        air.assert_no_processes()


def running(job):
    return job["status"] == "RUNNING"


def supervisor_of(air: Air) -> psutil.Process:
    return next(p for p in air.processes() if "jupyter_air.workloads.supervisor.process" in " ".join(p.cmdline()))


def told_secret(air: Air, job_id: str):
    """A wait for the job to run and its log to hold the secret."""
    return lambda job: running(job) and "secret=hunter2" in air("logs", job_id).stdout


def test_timeout_stops_the_attempt_and_counts_it_failed(airs, mlflow_client):
    # Given a workload that would sleep for minutes with timeout_minutes 0.04 (2.4 s)
    air, job_id = airs["timeout"]

    # When it runs
    job = air.wait(job_id)

    # Then the job is TIMED_OUT, its only attempt FAILED, its MLflow run FAILED, and no process remains
    assert job["status"] == "TIMED_OUT"
    assert "ran past timeout_minutes=0.04" in job["error"]
    assert job["exit_code"] == -signal.SIGTERM
    assert [a["status"] for a in job["attempts"]] == ["FAILED"]
    assert mlflow_client.get_run(job["mlflow_run_id"]).info.status == "FAILED"
    air.assert_no_processes()


def test_cancel_stops_the_whole_tree(airs, mlflow_client):
    # Given a running workload with a background child: supervisor, shell and two sleeps
    air, job_id = airs["cancel"]
    air.wait(job_id, running)
    assert len(air.processes()) >= 4

    # When it is canceled
    canceled = air.json("cancel", job_id)

    # Then the job is CANCELED, its MLflow run KILLED, and not one of its processes is left
    assert [j["job_run_id"] for j in canceled] == [job_id]
    assert canceled[0]["status"] == "CANCELED"
    job = air.job(job_id)
    assert job["status"] == "CANCELED" and job["attempts"][0]["status"] == "KILLED"
    assert mlflow_client.get_run(job["mlflow_run_id"]).info.status == "KILLED"
    air.assert_no_processes()

    # And canceling it again says it already ended
    again = air("cancel", job_id, check=True).stdout
    assert "not canceled: already CANCELED" in again


def test_cancel_all(airs, mlflow_client):
    air, job_id = airs["cancel_all"]
    air.wait(job_id, running)
    canceled = air.json("cancel", "--all")
    assert [(j["job_run_id"], j["status"]) for j in canceled] == [(job_id, "CANCELED")]
    air.assert_no_processes()
    assert air.json("cancel", "--all") == []


def test_a_supervisor_killed_with_sigkill_is_detected_as_failed(airs, mlflow_client):
    # Given a running job
    air, job_id = airs["killed"]
    job = air.wait(job_id, running)
    supervisor = supervisor_of(air)

    # When its supervisor is killed with SIGKILL (as by the OOM killer)
    supervisor.send_signal(signal.SIGKILL)
    psutil.wait_procs([supervisor], timeout=5)

    # Then the next command shows the job FAILED with that reason, never RUNNING
    job = air.job(job_id)
    assert job["status"] == "FAILED"
    assert f"supervisor process {supervisor.pid} is gone" in job["error"]
    assert job["attempts"][0]["status"] == "FAILED"
    # And the orphaned workload was stopped and the attempt's MLflow run closed as FAILED
    air.assert_no_processes()
    assert mlflow_client.get_run(job["mlflow_run_id"]).info.status == "FAILED"
    assert air.json("list") == []


def test_cancel_needs_ids_or_all(airs):
    air, _ = airs["cancel"]
    result = air("cancel")
    assert result.returncode == 2 and "--all" in result.stderr


def test_a_supervisor_that_cannot_reach_mlflow_fails_the_job(airs):
    # Given a job whose MLflow store cannot be opened
    air, job_id = airs["broken"]

    # When its supervisor gives up
    job = air.wait(job_id)

    # Then the job is FAILED with the supervisor's reason, no attempt ran and nothing is left running
    assert job["status"] == "FAILED"
    assert job["error"].startswith("supervisor error:")
    assert job["attempts"] == []
    air.assert_no_processes()


def test_with_logs_kept_by_the_service_a_killed_supervisors_run_gets_no_logs(airs, mlflow_client):
    # Given a job whose logs the service keeps, running, a secret in its log
    air, job_id = airs["killed_kept"]
    air.wait(job_id, told_secret(air, job_id))

    # When its supervisor is killed with SIGKILL and the next command takes over
    supervisor = supervisor_of(air)
    supervisor.send_signal(signal.SIGKILL)
    psutil.wait_procs([supervisor], timeout=5)
    job = air.job(job_id)

    # Then the attempt's run ended FAILED with no artifact: whoever reads the experiment does not read the secret
    assert job["status"] == "FAILED" and "is gone" in job["error"]
    assert mlflow_client.get_run(job["mlflow_run_id"]).info.status == "FAILED"
    assert mlflow_client.list_artifacts(job["mlflow_run_id"]) == []
    # And the service still serves the log behind the job's permissions
    assert "alice secret=hunter2" in air("logs", job_id, check=True).stdout
    air.assert_no_processes()


def test_with_logs_kept_by_the_service_a_cancel_that_takes_over_uploads_no_logs(airs, mlflow_client, monkeypatch):
    # Given a job whose logs the service keeps, running, a secret in its log, its supervisor stuck (stopped)
    air, job_id = airs["stuck_kept"]
    air.wait(job_id, told_secret(air, job_id))
    supervisor_of(air).send_signal(signal.SIGSTOP)

    # When the service cancels it and, the supervisor not stopping in time, takes over
    monkeypatch.setenv(LOGS_ENV, "service")
    store = JobStore(air.home)
    job = cancel(store, store.get(job_id), wait_seconds=0.5)

    # Then the job is CANCELED by air, its run KILLED with no artifact, and nothing is left running
    assert job.status == "CANCELED" and "the supervisor did not stop in time" in job.error
    run_id = job.attempts[0].mlflow_run_id
    assert mlflow_client.get_run(run_id).info.status == "KILLED"
    assert mlflow_client.list_artifacts(run_id) == []
    air.assert_no_processes()
