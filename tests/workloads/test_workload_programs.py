"""`air` run from a virtual environment that is not activated: the workload's command finds its programs."""

from __future__ import annotations

import sys
from pathlib import Path

from workload_helpers import Air, write_workload

ENVIRONMENT_BIN = str(Path(sys.executable).parent)
NOT_ACTIVATED = "/usr/local/bin:/usr/bin:/bin"


def test_a_workload_command_finds_the_environment_of_air(tmp_path, tracking_uri):
    # Given `air` run by its full path from a shell whose PATH lacks the environment
    air = Air(tmp_path / "air", tracking_uri)
    air.env["PATH"] = NOT_ACTIVATED
    command = "for p in torchrun python air; do command -v $p; done"
    path = write_workload(tmp_path, experiment_name="air-tests-programs", command=command)

    # When the workload runs, Then its command found the environment's programs
    job = air.wait(air.submit(path), timeout=180)
    assert job["status"] == "SUCCEEDED", job
    log = air("logs", job["job_run_id"], check=True).stdout
    assert [line.split()[-1] for line in log.splitlines()[-3:]] == [
        f"{ENVIRONMENT_BIN}/{name}" for name in ("torchrun", "python", "air")
    ]
    air.assert_no_processes()
