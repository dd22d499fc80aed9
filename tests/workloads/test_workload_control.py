"""Timeout, cancel and a killed supervisor: jobs end in the right state and leave no process behind."""

from __future__ import annotations

import signal

import psutil
import pytest
from workload_helpers import Air, write_workload

LONG = "sleep 120 & sleep 120; echo never"


@pytest.fixture(scope="module")
def airs(tmp_path_factory, tracking_uri):
    """One AIR_HOME per scenario, all started together so their supervisors start side by side."""
    made = {}
    for name, fields in {
        "timeout": {"command": LONG, "timeout_minutes": 0.04},
        "cancel": {"command": LONG},
        "cancel_all": {"command": LONG},
        "killed": {"command": LONG},
    }.items():
        home = tmp_path_factory.mktemp(name)
        air = Air(home / "air", tracking_uri)
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
    air.assert_no_processes(timeout=5)


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
    supervisor = next(p for p in air.processes() if "jupyter_air.workloads.supervisor" in " ".join(p.cmdline()))

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
    air.assert_no_processes(timeout=5)
