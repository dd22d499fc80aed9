"""The Jupyter server notices a job whose supervisor died, without any `air` command being run; the panel's reads
never do it."""

from __future__ import annotations

import json
import signal

import psutil
import pytest
from waiting import eventually
from workload_helpers import Air, write_workload

from jupyter_air.workloads.state.store import JobStore


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("AIR_HOME", str(tmp_path / "air"))
    return tmp_path / "air"


@pytest.fixture
def check_interval() -> float:
    """Seconds between the server's checks of the jobs (0: none)."""
    return 0.2


@pytest.fixture
def jp_server_config(home, air_config, fake_nvml, check_interval):
    return {
        "ServerApp": {"jpserver_extensions": {"jupyter_air": True}},
        "JupyterAir": {**air_config, "job_check_interval_seconds": check_interval},
    }


def kill_supervisor(air: Air) -> None:
    supervisor = next(p for p in air.processes() if "jupyter_air.workloads.supervisor.process" in " ".join(p.cmdline()))
    supervisor.send_signal(signal.SIGKILL)
    psutil.wait_procs([supervisor], timeout=5)


async def test_the_server_fails_a_job_whose_supervisor_was_killed(
    jp_serverapp, home, tmp_path, tracking_uri, mlflow_client
):
    # Given a Jupyter server, and a running job under its AIR_HOME
    air = Air(home, tracking_uri)
    job_id = air.submit(write_workload(tmp_path, experiment_name="air-tests-server-check", command="sleep 120"))
    air.wait(job_id, lambda job: job["status"] == "RUNNING")

    # When the supervisor is killed and nobody runs an `air` command
    kill_supervisor(air)

    # Then the server marks the job FAILED by itself (read straight from the job database), stops the
    # workload and fails the attempt's MLflow run
    store = JobStore(home)
    await eventually(lambda: store.get(job_id).status == "FAILED", timeout=30)
    job = store.get(job_id)
    assert "is gone" in job.error and job.attempts[0].status == "FAILED"
    await eventually(lambda: mlflow_client.get_run(job.attempts[0].mlflow_run_id).info.status == "FAILED", timeout=30)
    air.assert_no_processes()


@pytest.mark.parametrize("check_interval", [0])
async def test_the_panels_reads_leave_a_dead_supervisors_job_to_the_checks(
    jp_serverapp, jp_fetch, home, tmp_path, tracking_uri
):
    # Given a server whose periodic check is off, and a running job whose supervisor was killed
    air = Air(home, tracking_uri)
    job_id = air.submit(write_workload(tmp_path, experiment_name="air-tests-read-only", command="sleep 120"))
    air.wait(job_id, lambda job: job["status"] == "RUNNING")
    kill_supervisor(air)

    # When the Experiment panel lists the jobs and reads the job
    listed = json.loads((await jp_fetch("jupyter-air", "jobs")).body)["jobs"]
    detail = json.loads((await jp_fetch("jupyter-air", "jobs", job_id)).body)

    # Then both say what the job database says, and the reads changed nothing in it
    assert [job["status"] for job in listed] == [detail["status"]] == ["RUNNING"]
    assert JobStore(home).get(job_id).status == "RUNNING"
    # And the `air` command (what checks where no server runs) fails it and stops its workload
    assert air.job(job_id)["status"] == "FAILED"
    air.assert_no_processes()
