"""Faults: a full disk, dead supervisors, stubborn daemons, carriage returns, old databases, unusable homes."""

from __future__ import annotations

import json
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
from workload_helpers import Air, embedded, job_spec, write_workload

from jupyter_air.cli import main


def test_a_full_disk_fails_the_attempt_and_stops_the_workload(tmp_path):
    # Given files limited to 4 MiB (as `ulimit -f`), and a workload printing 20 MB as fast as it can
    air = embedded(tmp_path / "air")
    limit = 4 << 20
    script = "import sys, time\nfor _ in range(20000): sys.stdout.write('x' * 999 + chr(10))\ntime.sleep(300)"
    flood = f'{sys.executable} -c "{script}"'
    path = write_workload(tmp_path, experiment_name="air-tests-disk-full", command=flood)

    def limited():
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    submitted = subprocess.run(
        [sys.executable, "-m", "jupyter_air.cli", "run", "-f", str(path), "-o", "json"],
        env=air.env,
        capture_output=True,
        text=True,
        preexec_fn=limited,
        timeout=60,
    )
    job_id = json.loads(submitted.stdout)["job_run_id"]

    # When the log reaches the limit
    job = air.wait(job_id, timeout=180)

    # Then the attempt ends FAILED with the reason, instead of the workload hanging on a full pipe
    assert job["status"] == "FAILED"
    assert job["error"].startswith("log write failed: File too large"), job["error"]
    assert job["attempts"][0]["status"] == "FAILED"
    log = next(air.home.rglob("output.log"))
    assert 0 < log.stat().st_size <= limit
    air.assert_no_processes()


def test_a_killed_supervisor_keeps_the_output_and_the_workload_is_stopped_not_left_dying(
    tmp_path, tracking_uri, mlflow_client
):
    # Given a workload that prints a tick every 0.1 s and says so when it is asked to stop
    air = Air(tmp_path / "air", tracking_uri)
    ticking = "trap 'echo stopped by air; exit 143' TERM; i=0; while true; do echo tick $i; i=$((i+1)); sleep 0.1; done"
    job_id = air.submit(write_workload(tmp_path, experiment_name="air-tests-orphan", command=ticking))
    air.wait(job_id, lambda j: j["status"] == "RUNNING")
    supervisor = next(p for p in air.processes() if "jupyter_air.workloads.supervisor.process" in " ".join(p.cmdline()))

    # When its supervisor is killed with SIGKILL and the workload goes on for a second
    supervisor.send_signal(signal.SIGKILL)
    psutil.wait_procs([supervisor], timeout=5)
    killed_ms = time.time() * 1000
    time.sleep(1)

    # Then the next command fails the job; the workload's output after the kill was still written, and its
    # last words after air stopped it too (its pipe never broke)
    job = air.job(job_id)
    assert job["status"] == "FAILED" and "is gone" in job["error"]
    lines = [json.loads(x) for x in air("logs", job_id, "-o", "json", check=True).stdout.splitlines()]
    assert sum(1 for x in lines if x["ts"] and x["ts"] > killed_ms and x["line"].startswith("tick")) >= 5
    assert lines[-1]["line"] == "stopped by air"
    # And the attempt's MLflow run is FAILED with the reason and the output kept as an artifact
    run = mlflow_client.get_run(job["mlflow_run_id"])
    assert run.info.status == "FAILED" and "is gone" in run.data.tags["air.error"]
    artifacts = [a.path for a in mlflow_client.list_artifacts(run.info.run_id, "logs/attempt_0/node_0")]
    assert "logs/attempt_0/node_0/output.log" in artifacts
    air.assert_no_processes()


def test_cancel_stops_a_detached_daemon_holding_the_output_and_keeps_the_logs(tmp_path, tracking_uri, mlflow_client):
    # Given a workload that leaves a daemon in its own session, ignoring SIGTERM and writing to the output
    air = Air(tmp_path / "air", tracking_uri)
    daemon = "setsid sh -c 'trap \"\" TERM; while true; do echo daemon alive; sleep 0.2; done' & sleep 120"
    job_id = air.submit(write_workload(tmp_path, experiment_name="air-tests-daemon", command=daemon))
    air.wait(job_id, lambda j: j["status"] == "RUNNING")
    time.sleep(1)

    # When the job is canceled
    (canceled,) = air.json("cancel", job_id)

    # Then it is CANCELED, not one process is left (the daemon included), and the run has its logs
    assert canceled["status"] == "CANCELED"
    air.assert_no_processes()
    run = mlflow_client.get_run(canceled["mlflow_run_id"])
    assert run.info.status == "KILLED"
    local = mlflow_client.download_artifacts(run.info.run_id, "logs/attempt_0/node_0/output.log", str(tmp_path))
    assert "daemon alive" in Path(local).read_text()


def test_a_progress_bar_redrawn_with_carriage_returns_is_one_line_with_one_timestamp(tmp_path, tracking_uri):
    # Given a workload drawing a tqdm-style bar ("\r" between redraws) and then one more line
    air = Air(tmp_path / "air", tracking_uri)
    bar = (
        "printf 'epoch 1: 10%%\\r'; sleep 0.3; printf 'epoch 1: 50%%\\r'; sleep 0.3; "
        "printf 'epoch 1: 100%%\\n'; echo done"
    )
    job_id = air.submit(write_workload(tmp_path, experiment_name="air-tests-bar", command=bar))

    # When it is followed to its end and read again
    followed = air("logs", job_id, "--follow", "-o", "json", check=True, timeout=60).stdout.splitlines()
    read = air("logs", job_id, "-o", "json", check=True).stdout.splitlines()

    # Then both see two lines, the bar's redraws inside the first, each with its own timestamp
    for lines in (followed, read):
        shown = [json.loads(x) for x in lines]
        assert [x["line"] for x in shown] == ["epoch 1: 10%\repoch 1: 50%\repoch 1: 100%", "done"]
        assert all(isinstance(x["ts"], int) for x in shown)


def test_an_air_home_that_cannot_be_created_is_a_clear_error(tmp_path, monkeypatch, capsys):
    # Given AIR_HOME under a file, where no folder can be made
    (tmp_path / "a-file").write_text("")
    monkeypatch.setenv("AIR_HOME", str(tmp_path / "a-file" / "air"))

    # When a command needs it
    code = main(["list"])

    # Then it exits 2 with what, where and how to fix it, and no traceback
    err = capsys.readouterr().err
    assert code == 2
    assert f"AIR_HOME={tmp_path / 'a-file' / 'air'} cannot be created" in err and "export AIR_HOME=" in err
    assert "Traceback" not in err


def test_a_job_database_from_an_earlier_version_gains_the_new_columns(tmp_path):
    # Given a jobs.db made before jobs recorded their tracking URI
    import sqlite3

    from jupyter_air.workloads.state.store import JobStore

    old = sqlite3.connect(tmp_path / "jobs.db")
    old.execute(
        "CREATE TABLE jobs (job_run_id TEXT PRIMARY KEY, experiment_name TEXT NOT NULL, experiment_id TEXT,"
        " status TEXT NOT NULL, workload TEXT NOT NULL, source TEXT NOT NULL, user TEXT NOT NULL,"
        " executor TEXT NOT NULL, num_accelerators INTEGER NOT NULL, max_retries INTEGER NOT NULL,"
        " gpus TEXT, submitted_ms INTEGER NOT NULL, started_ms INTEGER, ended_ms INTEGER,"
        " supervisor_pid INTEGER, supervisor_started REAL, cancel_requested INTEGER NOT NULL DEFAULT 0,"
        " exit_code INTEGER, error TEXT)"
    )
    old.execute(
        "INSERT INTO jobs (job_run_id, experiment_name, status, workload, source, user, executor,"
        " num_accelerators, max_retries, gpus, submitted_ms) VALUES ('job-old', 'e', 'SUCCEEDED', '{}',"
        " 'w.yaml', 'me', 'local', 0, 0, '[]', 1)"
    )
    old.commit()
    old.close()

    # When this version opens it, Then the old job reads back and new jobs keep their tracking URI
    store = JobStore(tmp_path)
    assert store.get("job-old").tracking_uri is None
    spec = {"experiment_name": "e", "compute": {"num_accelerators": 0}, "max_retries": 0}
    assert store.create_job(spec, "w.yaml", "me", "local", "sqlite:///x.db").tracking_uri == "sqlite:///x.db"


def test_a_shared_air_home_is_reported_once_with_the_fix(tmp_path, monkeypatch, caplog):
    # Given an AIR_HOME made readable by others (as earlier versions created it)
    from jupyter_air import home as air_home_module

    shared = tmp_path / "shared-home"
    shared.mkdir(mode=0o755)
    shared.chmod(0o755)
    monkeypatch.setenv("AIR_HOME", str(shared))

    # When it is used several times
    for _ in range(3):
        air_home_module.air_home()

    # Then one warning says so and how to fix it, and the folder is left as the user set it
    warnings = [r.getMessage() for r in caplog.records if "can be read by other users" in r.getMessage()]
    assert warnings == [
        f"AIR_HOME {shared} can be read by other users (mode 755) and holds job environments and "
        f"runs: run `chmod 700 {shared}` to make it private."
    ]


def test_a_failure_right_after_the_attempts_run_is_created_ends_that_run(
    tmp_path, tracking_uri, mlflow_client, monkeypatch
):
    # Given a job whose attempt cannot be recorded once its MLflow run exists (the job database fails)
    from jupyter_air.workloads.state.store import JobStore
    from jupyter_air.workloads.supervisor.process import Supervisor

    monkeypatch.setenv("MLFLOW_TRACKING_URI", tracking_uri)
    store = JobStore(tmp_path / "air")
    spec = job_spec(tmp_path, experiment_name="air-tests-record-fails", mlflow_run_name="recorded")
    job = store.create_job(spec, "w.yaml", "me", "local", tracking_uri)

    def broken(*args, **kwargs):
        raise OSError("disk I/O error")

    monkeypatch.setattr(store, "start_attempt", broken)

    # When the supervisor runs it
    code = Supervisor(store, job.job_run_id).run()

    # Then the job failed with the reason, and the run it had created is FAILED, not left RUNNING
    assert code == 1 and store.get(job.job_run_id).status == "FAILED"
    experiment = mlflow_client.get_experiment_by_name("air-tests-record-fails")
    (run,) = mlflow_client.search_runs([experiment.experiment_id])
    assert run.info.status == "FAILED" and "disk I/O error" in run.data.tags["air.error"]
