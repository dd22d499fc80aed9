"""What a look at a Ray Job's workload (`air get`, `air list`, the panel) asks Ray: nothing while its supervisor, Ray's
driver of the job, runs on this machine; Ray's word once it does not. A real job store; Ray's job server stands in
as a recorded answer (the loopback cluster's tests in test_ray_jobs.py take the whole path)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from workload_helpers import job_spec

from jupyter_air import procs
from jupyter_air.workloads.state.store import JobStore
from jupyter_air.workloads.supervisor import executor, ray_jobs
from jupyter_air.workloads.supervisor.control import reap


@pytest.fixture
def ray_says(monkeypatch):
    """Ray's job server as a recorded answer: ``ray_says.status`` is what it says; ``ray_says.asked`` counts the
    questions, ``ray_says.stopped`` the jobs it was asked to stop."""

    class JobServer:
        status, asked, stopped = "RUNNING", 0, []

        def state(self, url: str, job_run_id: str) -> ray_jobs.RayJobState:
            self.asked += 1
            return ray_jobs.RayJobState(self.status, "")

    server = JobServer()
    monkeypatch.setattr(executor.ray_jobs, "state", server.state)
    monkeypatch.setattr(executor.ray_jobs, "stop", lambda url, job_run_id: server.stopped.append(job_run_id))
    return server


def _ray_job(store: JobStore, tmp_path, supervisor_pid: int, ray_status: str) -> str:
    job = store.create_job(job_spec(tmp_path), "w.yaml", "me", "ray-job", "sqlite:///unused.db")
    store.update(job.job_run_id, status="RUNNING", ray_job_url="http://127.0.0.1:8265", ray_status=ray_status)
    store.update(job.job_run_id, supervisor_pid=supervisor_pid, supervisor_started=procs.start_time(supervisor_pid))
    return job.job_run_id


def test_a_running_supervisor_answers_for_ray_and_a_gone_one_lets_ray_say_how_the_job_ended(tmp_path, ray_says):
    store = JobStore(tmp_path / "air")
    # Given a Ray Job whose supervisor runs here and recorded that Ray runs it
    running = _ray_job(store, tmp_path, supervisor_pid=os.getpid(), ray_status="RUNNING")

    # When the job is looked at (every look reaps), Then Ray is not asked and the job runs on
    assert reap(store) == [] and ray_says.asked == 0
    assert store.get(running).status == "RUNNING"

    # Given a Ray Job still PENDING in Ray when it was submitted (its supervisor not yet started as Ray's driver)
    pending = _ray_job(store, tmp_path, supervisor_pid=os.getpid(), ray_status="PENDING")
    # When it is looked at, Then Ray is asked, and its word is mirrored
    assert reap(store) == [] and ray_says.asked == 1
    assert store.get(pending).ray_status == "RUNNING"

    # Given the first job's supervisor gone without a word (killed), Ray having ended the job
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    store.update(running, supervisor_pid=gone.pid, supervisor_started=0.0)
    ray_says.status = "FAILED"

    # When the jobs are looked at, Then Ray is asked of that job only (the other's supervisor runs), and it ends
    # FAILED saying what Ray said, what is left of it stopped
    assert reap(store) == [running] and ray_says.asked == 2 and ray_says.stopped == [running]
    job = store.get(running)
    assert (job.status, job.ray_status) == ("FAILED", "FAILED")
    assert "its Ray job ended FAILED while the job was RUNNING" in job.error
    assert store.get(pending).status == "RUNNING"
