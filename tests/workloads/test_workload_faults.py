"""Faults and bad input around `air`: a disk that fills up, damaged databases, an AIR_HOME that is a file,
a download folder another user prepared, a misspelled command."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from workload_helpers import Air, embedded, write_workload

from jupyter_air.cli import main

FULL = "is full (No space left on device)"


@pytest.fixture
def small_disk(tmp_path):
    """A filesystem of 8 MiB of its own (a tmpfs, mounted as root) standing for a disk that fills up: a file size
    limit (`ulimit -f`) fails only the file that grows, never the job database or the MLflow store beside it."""
    if os.geteuid() != 0:
        pytest.skip("mounting a small filesystem needs root")
    disk = tmp_path / "disk"
    disk.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=8m,mode=0700", "tmpfs", str(disk)], check=False)
    if mounted.returncode != 0:
        pytest.skip("cannot mount a tmpfs here")
    yield disk
    subprocess.run(["umount", "--lazy", str(disk)], check=False)


def settled(air: Air, job_id: str, timeout: float = 180) -> dict:
    """`air get` once it answers (it cannot while the disk is full) and the job has ended."""
    deadline = time.monotonic() + timeout
    while True:
        result = air("get", job_id, "-o", "json")
        if result.returncode == 0 and json.loads(result.stdout)["status"] not in ("PENDING", "RUNNING"):
            return json.loads(result.stdout)
        if time.monotonic() > deadline:
            raise AssertionError(f"job {job_id} did not end: {result.stdout} {result.stderr}")
        time.sleep(0.5)


def test_a_full_disk_ends_the_job_with_that_reason_and_the_cli_says_so_in_one_line(small_disk):
    # Given AIR_HOME (job database, MLflow store, logs) on a small disk, and a workload printing 20 MB
    air = embedded(small_disk / "air")
    flood = f"{sys.executable} -c \"import sys\nfor _ in range(20000): sys.stdout.write('x' * 999 + chr(10))\""
    path = write_workload(small_disk.parent, experiment_name="air-tests-full-disk", command=flood, max_retries=2)

    # When its output fills the disk
    job_id = air.submit(path)
    job = settled(air, job_id)

    # Then the job is FAILED with the full disk as its reason, at once (not "supervisor ... is gone" later), and
    # is not retried: a retry would find the disk as full
    assert job["status"] == "FAILED"
    assert job["error"].startswith("log write failed: No space left on device"), job["error"]
    assert [a["status"] for a in job["attempts"]] == ["FAILED"]
    # And the attempt's MLflow run is FAILED with the reason, saying why its output was not uploaded
    from mlflow.tracking import MlflowClient

    client = MlflowClient(f"sqlite:///{air.home / 'mlflow.db'}")
    deadline = time.monotonic() + 60  # the supervisor ends the run just after recording the job's reason
    while (run := client.get_run(job["mlflow_run_id"])).info.status == "RUNNING" and time.monotonic() < deadline:
        time.sleep(0.5)
    assert run.info.status == "FAILED"
    assert "No space left on device" in run.data.tags["air.error"] and "not uploaded" in run.data.tags["air.error"]
    air.assert_no_processes()

    # When the disk is full and `air list` and `air get -o json` are run
    filler = small_disk / "filler"
    with open(filler, "wb", buffering=0) as f, pytest.raises(OSError):
        while True:
            f.write(b"\0" * (1 << 16))
    listed, got = air("list"), air("get", job_id, "-o", "json")

    # Then each says in one line that the disk is full (in JSON with -o json) and exits 1
    for result in (listed, got):
        assert result.returncode == 1 and "Traceback" not in result.stderr
        assert len(result.stderr.splitlines()) == 1 and FULL in result.stderr and str(air.home) in result.stderr
    assert json.loads(got.stdout)["exit_code"] == 1 and FULL in json.loads(got.stdout)["error"]

    # And once there is room again, the job reads back as it ended
    filler.unlink()
    assert air.job(job_id)["error"] == job["error"]


def test_a_damaged_job_database_is_one_line_naming_it_and_the_fix(tmp_path, monkeypatch, capsys):
    # Given a jobs.db overwritten with garbage
    home = tmp_path / "air"
    home.mkdir(mode=0o700)
    (home / "jobs.db").write_bytes(os.urandom(64 << 10))
    monkeypatch.setenv("AIR_HOME", str(home))

    # When jobs are listed, and one is asked for as JSON
    listed = main(["list"])
    listed_err = capsys.readouterr().err
    got = main(["get", "job-0123456789ab", "-o", "json"])
    got_out, got_err = capsys.readouterr()

    # Then each exits 1 with one line naming the file and what to do, never a traceback; JSON when asked for
    assert listed == got == 1
    for err in (listed_err, got_err):
        assert err.count("\n") == 1 and f"{home / 'jobs.db'} is damaged (file is not a database)" in err
        assert "move it aside" in err and "restore it from a backup" in err
    assert json.loads(got_out) == {"error": got_err.removeprefix("air get: error: ").rstrip("\n"), "exit_code": 1}


def test_an_air_home_that_is_a_file_is_one_line(tmp_path, monkeypatch, capsys):
    # Given AIR_HOME set to a file
    (tmp_path / "a-file").write_text("notes")
    monkeypatch.setenv("AIR_HOME", str(tmp_path / "a-file"))

    # When a command needs it, Then it exits 2 saying so, and the file is left as it was
    assert main(["list"]) == 2
    err = capsys.readouterr().err
    assert f"AIR_HOME={tmp_path / 'a-file'} is not a folder" in err and "Traceback" not in err
    assert (tmp_path / "a-file").read_text() == "notes"


@pytest.mark.parametrize("where", ["file", "override"])
def test_thousands_of_nested_lists_are_refused_in_one_line(where, air, tmp_path, capsys):
    # Given 5,000 nested YAML lists in the workload file, or in an override
    nested = "[" * 5000 + "]" * 5000
    value = nested if where == "file" else "[]"
    path = tmp_path / "deep.yaml"
    path.write_text(f"experiment_name: deep\ncommand: echo hi\nparameters:\n  layers: {value}\n")
    overrides = ["--override", f"parameters.layers={nested}"] if where == "override" else []

    # When it is submitted, Then it exits 2 saying where, without a traceback, and nothing is created
    assert main(["run", "-f", str(path), *overrides]) == 2
    err = capsys.readouterr().err
    expected = f"{path}:4: lists and mappings nest more than 50 deep" if where == "file" else "nest over 50 deep"
    assert expected in err and "Traceback" not in err and "RecursionError" not in err
    assert not (air.home / "jobs.db").exists()


def test_a_misspelled_command_is_refused_at_submit_with_a_hint(air, tmp_path, capsys):
    # Given a workload whose command starts with a program that does not exist
    path = tmp_path / "workload.yaml"
    path.write_text("experiment_name: typo\ncommand: pyhton train.py\ncompute: {num_accelerators: 0}\n")

    # When it is submitted, Then it is refused at once (status 2) with file:line, what and a hint; nothing starts
    assert main(["run", "-f", str(path)]) == 2
    err = capsys.readouterr().err
    assert f"{path}:2: command: 'pyhton' is not on PATH (command not found)" in err
    assert "did you mean 'python" in err
    assert not (air.home / "jobs.db").exists()


def test_a_command_not_found_at_run_time_says_so(air, tmp_path):
    # Given a command whose missing program only the shell meets (after a `cd`)
    job_id = air.submit(write_workload(tmp_path, experiment_name="air-tests-127", command="cd . && pyhton train.py"))

    # When it runs, Then the job says what exit code 127 means
    job = air.wait(job_id)
    assert job["status"] == "FAILED" and job["exit_code"] == 127
    assert (
        job["error"] == "command exited with code 127 (command not found? check the spelling of the program and PATH)"
    )


def as_nobody(*command: str) -> subprocess.CompletedProcess:
    return subprocess.run(["runuser", "-u", "nobody", "--", *command], capture_output=True, text=True, check=False)


@pytest.mark.skipif(os.geteuid() != 0, reason="acting as a second user needs root to switch users")
def test_download_never_writes_where_another_user_prepared(shared_tmp, tracking_uri):
    # Given a job whose log holds a secret, and a folder every user may write in (sticky, as /tmp)
    air = Air(shared_tmp / "air", tracking_uri)
    path = write_workload(shared_tmp, experiment_name="air-tests-download", command="echo hf_secret in the log")
    job_id = air.submit(path)
    assert air.wait(job_id)["status"] == "SUCCEEDED"
    public = shared_tmp / "public"
    public.mkdir()
    public.chmod(0o1777)
    # And there, another user made the folders and the file a download would write, readable by them
    node = public / job_id / "attempt_0" / "node_0"
    made = as_nobody("sh", "-c", f"umask 0 && mkdir -p {node} && touch {node / 'output.log'}")
    assert made.returncode == 0, made.stderr

    # When the log is downloaded to that shared folder
    result = air("logs", job_id, "--download-to", str(public))

    # Then air refuses (status 2: the folder given cannot be used), naming it, and that user reads no secret
    assert result.returncode == 2 and f"{public / job_id} belongs to another user (uid 65534)" in result.stderr
    assert "hf_secret" not in as_nobody("cat", str(node / "output.log")).stdout

    # When the target is a folder of ours that others may write, Then it is refused, nothing written in it
    open_to_all = shared_tmp / "open"
    open_to_all.mkdir()
    open_to_all.chmod(0o777)
    result = air("logs", job_id, "--download-to", str(open_to_all))
    assert result.returncode == 2 and "can be written by other users (mode 777)" in result.stderr
    assert list(open_to_all.iterdir()) == []

    # When the target is a shared sticky folder where nobody prepared anything
    mine = shared_tmp / "mine"
    mine.mkdir()
    mine.chmod(0o1777)
    written = Path(air.json("logs", job_id, "--download-to", str(mine))["path"])
    # Then the log is written owner-only, another user cannot read it, and a second download is a new file
    assert written.read_text() == "hf_secret in the log\n" and oct(written.stat().st_mode)[-3:] == "600"
    assert as_nobody("cat", str(written)).returncode != 0
    inode = written.stat().st_ino
    assert Path(air.json("logs", job_id, "--download-to", str(mine))["path"]).stat().st_ino != inode
