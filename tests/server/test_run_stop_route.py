"""POST jupyter-air/runs/<id>/stop: a Stop request reaches the live run without waiting for its kernel."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from tornado.httpclient import HTTPClientError

from jupyter_air.tracking.stops import LiveRun


@pytest.fixture
def air_home(tmp_path, monkeypatch):
    monkeypatch.setenv("AIR_HOME", str(tmp_path / "air"))
    return tmp_path / "air"


async def stop(jp_fetch, run_id: str):
    return await jp_fetch("jupyter-air", "runs", run_id, "stop", method="POST", body=b"")


async def test_a_stop_request_reaches_the_live_run(jp_fetch, air_home):
    # Given a run in progress in this process (as in a busy kernel)
    live = LiveRun("0a1b2c3d4e5f")
    assert not live.requested()

    # When the Stop route is called
    response = await stop(jp_fetch, "0a1b2c3d4e5f")

    # Then it answers at once, and the run's process sees the request
    assert response.code == 200
    assert json.loads(response.body) == {"run_id": "0a1b2c3d4e5f", "stop_requested": True}
    assert live.requested()
    # And once the run ends nothing is left behind, and a later request is refused
    live.close()
    assert list((air_home / "live-runs").iterdir()) == []
    with pytest.raises(HTTPClientError) as refused:
        await stop(jp_fetch, "0a1b2c3d4e5f")
    assert refused.value.code == 409


async def test_a_run_that_is_not_running_here_cannot_be_stopped(jp_fetch, air_home):
    # Given no live run, When its Stop is requested, Then 409 says there is nothing to stop
    with pytest.raises(HTTPClientError) as refused:
        await stop(jp_fetch, "feedface")
    body = json.loads(refused.value.response.body)
    assert refused.value.code == 409
    assert "Run feedface is not running in a kernel or script" in body["message"]
    assert "nothing to stop" in body["message"]


async def test_a_run_whose_process_died_cannot_be_stopped(jp_fetch, air_home):
    # Given a live run registered by a process that then died (a kernel killed mid-run)
    code = "from jupyter_air.tracking.stops import LiveRun; LiveRun('deadbeef')"
    subprocess.run([sys.executable, "-c", code], check=True)
    assert (air_home / "live-runs" / "deadbeef.pid").exists()

    # When its Stop is requested, Then it is refused, and no flag is left (the server's check ends the run)
    with pytest.raises(HTTPClientError) as refused:
        await stop(jp_fetch, "deadbeef")
    assert refused.value.code == 409
    assert [p.name for p in (air_home / "live-runs").iterdir()] == ["deadbeef.pid"]


async def test_a_run_id_that_is_too_long_is_a_bad_request(jp_fetch, air_home):
    with pytest.raises(HTTPClientError) as refused:
        await stop(jp_fetch, "a" * 65)
    assert refused.value.code == 400
    assert "is not an MLflow run id" in json.loads(refused.value.response.body)["message"]


TRAIN = """
from jupyter_air import distributed


@distributed(gpus=1, log_system_metrics=False)
def train():
    import time

    time.sleep(300)


train.distributed()
"""


async def test_a_run_inside_an_air_job_is_not_stopped_alone(jp_fetch, air_home, tmp_path):
    # Given an `air` job whose script makes a `.distributed()` call: the call resumes the attempt's run and
    # registers it for Stop requests
    from workloads.workload_helpers import Air, write_workload

    air = Air(air_home, f"sqlite:///{tmp_path / 'mlflow.db'}")
    scratch = tmp_path / "tmp"  # the job's temporary folder: its fork server's and its call's folders go there
    scratch.mkdir()
    air.env["TMPDIR"] = str(scratch)
    (tmp_path / "train.py").write_text(TRAIN)
    job_id = air.submit(write_workload(tmp_path, experiment_name="stop-job", command=f"{sys.executable} train.py"))
    live = air_home / "live-runs"
    registered = lambda job: job["mlflow_run_id"] and (live / f"{job['mlflow_run_id']}.pid").exists()  # noqa: E731
    run_id = air.wait(job_id, registered)["mlflow_run_id"]

    try:
        # When Stop is asked for that run
        with pytest.raises(HTTPClientError) as refused:
            await stop(jp_fetch, run_id)

        # Then it is refused (409) saying to cancel the job, and nothing reaches the call: the job does not retry
        message = json.loads(refused.value.response.body)["message"]
        assert refused.value.code == 409
        assert f"attempt 0 of the air job {job_id}" in message and f"air cancel {job_id}" in message
        assert not (live / f"{run_id}.stop").exists()
        assert air.job(job_id)["status"] == "RUNNING"
    finally:
        air("cancel", job_id)
    air.assert_no_processes()
    # and the cancel, which SIGTERMs the job's whole process tree, left none of the call's folders behind
    assert list(scratch.glob("air-*")) == []
