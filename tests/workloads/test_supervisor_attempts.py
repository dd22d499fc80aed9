"""The supervisor's own logic (retries, timeout, cancel, a refused placement, a full disk) at unit level: a scripted
AttemptRunner in place of the processes, against a real job store and a real MLflow store, the supervisor in this
process. The end-to-end tests keep what only real processes show (a process tree stopped, nothing left behind)."""

from __future__ import annotations

import signal
import threading
import time
from pathlib import Path

import pytest
from workload_helpers import job_spec

from jupyter_air.cluster.errors import ClusterError
from jupyter_air.workloads.state.store import JobStore
from jupyter_air.workloads.supervisor.process import NOT_UPLOADED, Supervisor

HANGS = None  # an exit status for an attempt whose work never ends by itself


class ScriptedRunner:
    """An AttemptRunner whose work ends with ``exit_code`` at once (or never, :data:`HANGS`), or whose placement is
    refused (``place_error``) or waits until canceled (``waits_for_resources``); it writes one line of output."""

    def __init__(self, folder: Path, exit_code=0, problem=None, place_error=None, waits_for_resources=False):
        self.log_dirs, self.nodes, self.pid, self.started = [folder], None, None, None
        self.exit_code, self.problem = exit_code, None
        self._later_problem, self._place_error, self._waits = problem, place_error, waits_for_resources
        self.calls: list[str] = []
        self._stopped = threading.Event()

    def place(self, cancel: threading.Event, note) -> bool:
        self.calls.append("place")
        if self._place_error:
            raise ClusterError(self._place_error)
        if self._waits:
            note("waiting for 2 free GPU(s) held by other jobs")
            cancel.wait(30)
            return False
        return True

    def start(self, overrides: dict[str, str], run) -> None:
        self.calls.append("start")
        self.overrides = overrides
        self.log_dirs[0].mkdir(parents=True, exist_ok=True)
        (self.log_dirs[0] / "output.log").write_text(f"attempt of run {overrides['MLFLOW_RUN_ID']}\n")
        self.problem = self._later_problem

    def wait(self, timeout: float) -> int | None:
        if self.exit_code is HANGS and not self._stopped.wait(timeout):
            return None
        return -15 if self._stopped.is_set() else self.exit_code

    def stop(self, grace_seconds: float = 0) -> int | None:
        self.calls.append("stop")
        self._stopped.set()
        return -15

    def finish(self) -> None:
        self.calls.append("finish")


@pytest.fixture
def supervise(tmp_path, tracking_uri, monkeypatch):
    """Create a job with ``spec`` changes and run its supervisor here with the scripted runners (one per attempt);
    ``during(supervisor)`` runs beside it. Returns (the job as stored, the runners)."""
    monkeypatch.setenv("MLFLOW_TRACKING_URI", tracking_uri)
    store = JobStore(tmp_path / "air")

    def run(runners: list[dict], during=None, **spec):
        spec = job_spec(tmp_path, max_retries=len(runners) - 1, mlflow_run_name="scripted", **spec)
        job = store.create_job(spec, "w.yaml", "me", "local", tracking_uri)
        made = [ScriptedRunner(tmp_path / f"attempt_{n}", **script) for n, script in enumerate(runners)]
        supervisor = Supervisor(store, job.job_run_id)
        supervisor.executor.runner = lambda context: made[context.attempt]
        beside = threading.Thread(target=during, args=(supervisor,)) if during else None
        if beside:
            beside.start()
        code = supervisor.run()
        if beside:
            beside.join()
        return code, store.get(job.job_run_id), made

    return run


def runs_of(mlflow_client, job) -> list:
    return [mlflow_client.get_run(a.mlflow_run_id) for a in job.attempts]


def test_failed_attempts_are_retried_until_one_succeeds_each_its_own_run_with_its_output(supervise, mlflow_client):
    # Given a job whose first two attempts exit 1 and 127, and whose third succeeds
    code, job, runners = supervise([{"exit_code": 1}, {"exit_code": 127}, {"exit_code": 0}])

    # Then the job SUCCEEDED after three attempts, each ended as it did and recorded as its own MLflow run
    assert code == 0 and job.status == "SUCCEEDED" and job.exit_code == 0
    assert [(a.status, a.exit_code) for a in job.attempts] == [("FAILED", 1), ("FAILED", 127), ("FINISHED", 0)]
    assert "command not found?" in job.attempts[1].error
    runs = runs_of(mlflow_client, job)
    assert [r.info.status for r in runs] == ["FAILED", "FAILED", "FINISHED"]
    assert [r.info.run_name for r in runs] == ["scripted", "scripted (retry 1)", "scripted (retry 2)"]
    assert [r.data.tags["air.attempt"] for r in runs] == ["0", "1", "2"] and runs[0].data.params == {"lr": "0.1"}
    # And each attempt's work got its own run's id, and its output is that run's artifact
    assert [r.overrides["MLFLOW_RUN_ID"] for r in runners] == [r.info.run_id for r in runs]
    (logged,) = mlflow_client.list_artifacts(runs[2].info.run_id, "logs/attempt_2/node_0")
    assert logged.path.endswith("output.log")
    assert all(r.calls == ["place", "start", "finish", "finish"] for r in runners)


def test_when_retries_run_out_the_job_fails_with_the_last_attempts_exit(supervise):
    handlers = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    code, job, _ = supervise([{"exit_code": 1}, {"exit_code": 3}])

    assert code == 1 and job.status == "FAILED" and job.exit_code == 3
    assert job.error == "command exited with code 3" and len(job.attempts) == 2
    # And the supervisor left this process's signal handlers as they were (its process's own are set by its main)
    assert {sig: signal.getsignal(sig) for sig in handlers} == handlers


def test_an_attempt_past_its_timeout_is_stopped_and_the_job_timed_out_without_retry(supervise, mlflow_client):
    # Given an attempt that never ends, a timeout of 0.3 s, and a retry that would succeed
    code, job, runners = supervise([{"exit_code": HANGS}, {"exit_code": 0}], timeout_minutes=0.005)

    # Then the attempt was stopped, its run FAILED, and a timeout counts as a failure that is retried
    assert "stop" in runners[0].calls
    assert job.attempts[0].status == "FAILED" and "ran past timeout_minutes=0.005" in job.attempts[0].error
    assert runs_of(mlflow_client, job)[0].info.status == "FAILED"
    assert code == 0 and job.status == "SUCCEEDED"


def test_cancel_while_an_attempt_runs_stops_it_kills_its_run_and_retries_nothing(supervise, mlflow_client):
    def cancel_once_running(supervisor):
        deadline = time.monotonic() + 60
        while supervisor.store.get(supervisor.job_run_id).status != "RUNNING" and time.monotonic() < deadline:
            time.sleep(0.02)
        supervisor.cancel.set()  # what SIGTERM from `air cancel` does

    code, job, runners = supervise([{"exit_code": HANGS}, {"exit_code": 0}], during=cancel_once_running)

    assert code == 1 and job.status == "CANCELED" and job.error == "attempt 0 canceled"
    assert len(job.attempts) == 1 and "stop" in runners[0].calls and runners[1].calls == []
    assert runs_of(mlflow_client, job)[0].info.status == "KILLED"


def test_cancel_while_waiting_for_resources_creates_no_run(supervise, mlflow_client):
    def cancel_while_waiting(supervisor):
        deadline = time.monotonic() + 60
        while "waiting" not in (supervisor.store.get(supervisor.job_run_id).error or ""):
            assert time.monotonic() < deadline
            time.sleep(0.02)
        supervisor.cancel.set()

    code, job, runners = supervise([{"waits_for_resources": True}], during=cancel_while_waiting)

    assert code == 1 and job.status == "CANCELED" and job.attempts == []
    assert job.error == "canceled while attempt 0 waited for its resources" and runners[0].calls == ["place", "finish"]


def test_a_placement_that_can_never_happen_fails_the_job_with_its_reason_and_no_run(supervise):
    reason = "the Ray cluster has no node with 8 GPUs"
    code, job, runners = supervise([{"place_error": reason}, {"exit_code": 0}])

    # Then the refusal is retried as any failure, and the second attempt runs
    assert code == 0 and job.status == "SUCCEEDED" and [a.attempt for a in job.attempts] == [1]
    code, job, _ = supervise([{"place_error": reason}])
    assert code == 1 and job.status == "FAILED" and job.error == reason and job.attempts == []


def test_a_full_disk_fails_at_once_without_retry_and_uploads_no_output(supervise, mlflow_client):
    # Given an attempt whose output writer finds the disk full, and retries left
    full = "log write failed: [Errno 28] No space left on device"
    code, job, runners = supervise([{"exit_code": HANGS, "problem": full}, {"exit_code": 0}])

    # Then the job FAILED with the reason at once, its run says the output was not uploaded, nothing was retried
    assert code == 1 and job.status == "FAILED" and full in job.error and len(job.attempts) == 1
    assert runners[1].calls == [] and "stop" in runners[0].calls
    (run,) = runs_of(mlflow_client, job)
    assert run.info.status == "FAILED" and NOT_UPLOADED in run.data.tags["air.error"]
    assert mlflow_client.list_artifacts(run.info.run_id) == []
