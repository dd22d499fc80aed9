"""The team's job service with ``AIR_JOBS_RUN_AS=owner`` (running as root): each job's command runs as the local
account named like its owner, without the service's credentials, and cannot read the service's job store. A hub
user with no local account is refused before anything is created. The logs of a job whose supervisor is gone are
kept in its run's local artifact folder as its owner, never through a link the job planted."""

from __future__ import annotations

import os
import pwd
import secrets
import shutil
import signal
import tempfile
import time
from pathlib import Path

import psutil
import pytest
from resident_servers import stop_all, until
from workload_helpers import Air, write_workload

from jupyter_air.tracking import resident
from jupyter_air.workloads.jobs.jobs import Jobs, SubmitError
from jupyter_air.workloads.state.permissions import Caller
from jupyter_air.workloads.state.store import JobStore
from jupyter_air.workloads.supervisor.control import cancel, reap

pytestmark = [
    pytest.mark.skipif(shutil.which("runuser") is None or os.geteuid() != 0, reason="needs root"),
    pytest.mark.local_store,  # a local store's own server, and a local artifact folder
]

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


#: A line of root's ``authorized_keys``, and the one a job would put there.
ROOT_KEY, BOBS_KEY = "ssh-ed25519 AAAA root@host\n", "ssh-ed25519 BBBB bob@elsewhere"
#: Plants the attempt's log in the run's artifact folder as a link to ``$KEYS``, says a key, and runs on.
PLANT = (
    'logs="$ART/$MLFLOW_RUN_ID/artifacts/logs/attempt_0/node_0" && mkdir -p "$logs" && '
    f'ln -s "$KEYS" "$logs/output.log" && echo "{BOBS_KEY}" && sleep 120'
)


@pytest.fixture
def served_store(team_service, tracking_uri):
    """The store's MLflow server, answering: runs, and artifacts in a local folder, are written through our REST
    client (as with a team's tracking server) rather than MLflow's client in the process. At the end, jobs still
    active are canceled and the server is stopped."""
    server = resident.ensure(tracking_uri)
    until(server.answers, 120)
    yield
    store = JobStore(team_service / "air")
    for job in store.list(active_only=True) if (store.home / "jobs.db").exists() else []:
        cancel(store, job)
    stop_all(team_service / "air")


def test_a_take_over_keeps_the_log_as_its_owner_never_through_a_link_the_job_planted(
    team_service, served_store, tracking_uri, mlflow_client
):
    # Given a file only root may write, and nobody's job, logging to a local artifact folder nobody owns (logs uploaded:
    # no AIR_JOB_LOGS=service), that links its log's artifact path to root's file and says a key
    nobody = pwd.getpwnam("nobody")
    keys, art = team_service / "authorized_keys", team_service / "art"
    keys.write_text(ROOT_KEY)
    keys.chmod(0o600)
    art.mkdir()
    os.chown(art, nobody.pw_uid, nobody.pw_gid)
    jobs = Jobs(team_service / "air", Caller("nobody"))
    path = write_workload(
        team_service,
        experiment_name=f"air-tests-run-as-link-{secrets.token_hex(4)}",
        command=PLANT,
        mlflow_artifact_location=art.as_uri(),
        env_variables={"ART": str(art), "KEYS": str(keys)},
    )
    job_id = jobs.submit_file(path).job_run_id
    deadline = time.monotonic() + 90
    while not (job := jobs.get(job_id)).attempts or BOBS_KEY not in jobs.logs(job_id)["text"]:
        assert time.monotonic() < deadline and job.active, job
        time.sleep(0.2)

    # When its supervisor is killed with SIGKILL (the host's OOM killer) and the service takes over
    supervisor = psutil.Process(jobs.get(job_id).supervisor_pid)
    supervisor.send_signal(signal.SIGKILL)
    psutil.wait_procs([supervisor], timeout=5)
    assert reap(jobs.store) == [job_id]

    # Then root's file is untouched, and the log is in the run's artifacts as a file of nobody's, the link replaced
    assert keys.read_text() == ROOT_KEY
    job = jobs.get(job_id)
    kept = art / job.attempts[0].mlflow_run_id / "artifacts" / "logs" / "attempt_0" / "node_0" / "output.log"
    assert not kept.is_symlink() and kept.stat().st_uid == nobody.pw_uid
    assert kept.read_text() == BOBS_KEY + "\n"
    # And the job and its run ended FAILED, nothing of it left running
    assert job.status == "FAILED" and mlflow_client.get_run(job.attempts[0].mlflow_run_id).info.status == "FAILED"
    Air(team_service / "air", tracking_uri).assert_no_processes()
