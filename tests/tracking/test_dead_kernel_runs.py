"""A kernel killed mid-run (the OOM killer, `kill -9`): the Jupyter server's check ends its run FAILED, and its
call's processes went with it."""

from __future__ import annotations

import pathlib
import subprocess
import sys
import time

import psutil
import pytest
from fork_servers import fork_server_tree
from live_runs import live_run_ids, new_live_run
from waiting import eventually

REPO = pathlib.Path(__file__).resolve().parents[2]

KERNEL = """
import sys, time
sys.path.insert(0, {repo!r})
from jupyter_air import distributed

def train(folder):
    import os, pathlib, time
    pathlib.Path(folder, "rank" + os.environ["RANK"]).write_text(str(os.getpid()))
    time.sleep(600)

distributed(train, gpus=2, experiment="dead-kernel").distributed({folder!r})
"""


@pytest.fixture
def jp_server_config(air_home, air_config, fake_nvml):
    return {
        "ServerApp": {"jpserver_extensions": {"jupyter_air": True}},
        "JupyterAir": {**air_config, "job_check_interval_seconds": 0.2},
    }


async def test_the_run_of_a_killed_kernel_ends_failed_and_leaves_nothing(jp_serverapp, store, air_home, tmp_path):
    # Given a kernel (a process of this user) in the middle of a 2-rank call, under this server's AIR_HOME
    before = live_run_ids(air_home)
    kernel = subprocess.Popen([sys.executable, "-c", KERNEL.format(repo=str(REPO), folder=str(tmp_path))])
    try:
        await eventually(lambda: all((tmp_path / f"rank{r}").exists() for r in (0, 1)), timeout=120)
        run_id = new_live_run(air_home, before)
        _, below = fork_server_tree(kernel.pid)  # the call's processes

        # When the kernel is killed with SIGKILL (it cleans up nothing)
        kernel.kill()
        kernel.wait()
    finally:
        if kernel.poll() is None:
            kernel.kill()

    # Then the server's check ends the run FAILED, saying its kernel died, and forgets it
    await eventually(lambda: store.get_run(run_id).info.status == "FAILED", timeout=30)
    assert "its kernel (process" in store.get_run(run_id).data.tags["air.error"]
    # (it forgets the run just after ending it: the test may look in between)
    await eventually(lambda: list((air_home / "live-runs").glob(f"{run_id}.*")) == [], timeout=10)
    # And nothing of the call runs any more (its fork server saw its owner go and stopped it)
    deadline = time.monotonic() + 20
    while (left := [p for p in below if running(p)]) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert left == []


def running(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False
