"""Other users: a brand-new AIR_HOME is private from its first run on, secrets and logs included."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import tempfile
from pathlib import Path

import pytest
from workload_helpers import embedded, write_workload

NOBODY = 65534


@pytest.fixture
def shared_tmp():
    """A temp folder other users may enter (pytest's own are root-only), so only AIR_HOME's mode protects it."""
    from resident_servers import stop_all

    folder = Path(tempfile.mkdtemp(prefix="air-shared-"))
    folder.chmod(0o755)
    yield folder
    stop_all(folder)  # AIR_HOME's MLflow server, started by the first run
    shutil.rmtree(folder, ignore_errors=True)


def test_concurrent_first_runs_share_one_store_and_everything_is_owner_only(shared_tmp):
    # Given a brand-new AIR_HOME and the embedded MLflow store, nothing created yet
    air = embedded(shared_tmp / "air")
    path = write_workload(
        shared_tmp, experiment_name="air-tests-first", command="echo first run", env_variables={"HF_TOKEN": "hf_secret"}
    )

    # When 5 `air run` start at once (each supervisor creates the store's tables if nobody has)
    runs = [air.popen("run", "-f", str(path), "-o", "json") for _ in range(5)]
    answers = [r.communicate(timeout=120) for r in runs]
    assert [r.returncode for r in runs] == [0] * 5, [err for _, err in answers]
    ids = [json.loads(out)["job_run_id"] for out, _ in answers]
    jobs = [air.wait(job_id, timeout=180) for job_id in ids]

    # Then every one succeeded, each its own MLflow run
    assert [j["status"] for j in jobs] == ["SUCCEEDED"] * 5, [j["error"] for j in jobs]
    assert len({j["mlflow_run_id"] for j in jobs}) == 5
    # And AIR_HOME and everything in it is owner-only: folders 0700, files 0600
    home = air.home
    assert stat.S_IMODE(home.stat().st_mode) == 0o700
    shared = [
        (str(p.relative_to(home)), oct(stat.S_IMODE(p.stat().st_mode)))
        for p in [home, *home.rglob("*")]
        if stat.S_IMODE(p.stat().st_mode) & 0o077
    ]
    assert shared == []
    assert {"jobs.db", "mlflow.db", "mlartifacts", "jobs"} <= {p.name for p in home.iterdir()}
    air.assert_no_processes()


@pytest.mark.skipif(os.geteuid() != 0, reason="reading as a second user needs root to switch users")
def test_another_user_cannot_read_secrets_runs_or_logs(shared_tmp):
    # Given a job whose environment holds a secret, in an AIR_HOME under a folder everyone may enter
    air = embedded(shared_tmp / "air")
    path = write_workload(
        shared_tmp,
        experiment_name="air-tests-private",
        command="echo hf_secret in the log",
        env_variables={"HF_TOKEN": "hf_secret"},
    )
    job = air.wait(air.submit(path), timeout=180)
    assert job["status"] == "SUCCEEDED"
    download = shared_tmp / "download"
    air("logs", job["job_run_id"], "--download-to", str(download), check=True)

    # When another user tries to read the job database, the MLflow store, the logs and the download
    targets = [
        air.home / "jobs.db",
        air.home / "mlflow.db",
        *air.home.rglob("output.log"),
        *download.rglob("output.log"),
    ]
    results = [subprocess.run(["cat", str(t)], user=NOBODY, group=NOBODY, capture_output=True) for t in targets]

    # Then every read is refused
    assert len(targets) >= 5  # the job database, the store, the log, its MLflow artifact and the download
    readable = [str(t) for t, r in zip(targets, results, strict=True) if r.returncode == 0 or b"hf_secret" in r.stdout]
    assert readable == []
    assert all(b"Permission denied" in r.stderr for r in results)
