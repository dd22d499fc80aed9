"""The demo's simulated GPUs are used by this user's ``.distributed()`` callers of the same AIR_HOME: the GPU panel
shows a notebook's call and its kernel behind them, and the kernel left idle becomes an idle GPU holder."""

from __future__ import annotations

import asyncio
import json
import os
import pathlib
import subprocess
import sys
import time

import psutil
import pytest
from resident_servers import until

from jupyter_air.gpu import callers
from jupyter_air.gpu.simulated import HELD_BYTES, RANK_BYTES, WORKING_PERCENT

pytestmark = pytest.mark.usefixtures("no_orphans")

REPO = pathlib.Path(__file__).resolve().parents[2]
IDLE_SECONDS = 3.0

SCRIPT = """
import os, pathlib, sys, time
from jupyter_air import distributed

@distributed(gpus=2, experiment="simulated-gpu-users", log_system_metrics=False)
def hold(folder):
    import os, pathlib, time
    pathlib.Path(folder, "rank" + os.environ["RANK"]).write_text(str(os.getpid()))
    while not pathlib.Path(folder, "release").exists():
        time.sleep(0.05)

folder = pathlib.Path(sys.argv[1])
hold.distributed(str(folder))
(folder / "called").write_text("")
time.sleep(600)
"""


def test_a_script_that_ran_a_call_is_a_user_with_its_ranks_and_nothing_below_it_is(store, tmp_path):
    # Given a script (its own fork server, not the zygote's) whose call runs 2 ranks
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    script = subprocess.Popen([sys.executable, "-c", SCRIPT, str(tmp_path)], env=env)
    try:
        until(lambda: all((tmp_path / f"rank{r}").exists() for r in (0, 1)), timeout=180)
        ranks = {int((tmp_path / f"rank{r}").read_text()) for r in (0, 1)}
        # When this user's processes are looked through
        found = callers.find()
        # Then the script is a user of the simulated GPUs, with its call's 2 ranks
        (mine,) = [c for c in found if c.pid == script.pid]
        assert {pid for pid, _ in mine.ranks} == ranks and mine.name
        # And nothing below it is taken for another user (the call's processes keep the fork server's command line)
        below = {p.pid for p in psutil.Process(script.pid).children(recursive=True)}
        assert len(below) >= 4 and [c.pid for c in found if c.pid in below] == []
        # And it uses no other AIR_HOME's simulated GPUs (another server's, whose kernels start with that AIR_HOME)
        assert [c for c in callers.find(tmp_path / "another-air-home") if c.pid == script.pid] == []
        # And once the call has ended, the script still uses them, without ranks
        (tmp_path / "release").write_text("")
        until(lambda: (tmp_path / "called").exists(), timeout=60)
        assert [c.ranks for c in callers.find() if c.pid == script.pid] == [()]
    finally:
        script.kill()
        script.wait()


DEFINE = """
from jupyter_air import distributed
from jupyter_air.training.forkserver_client import Launcher

@distributed(gpus=2, experiment="simulated-gpu-users", log_system_metrics=False)
def rank_pid(seconds):
    import os, time
    time.sleep(seconds)
    return os.getpid()

Launcher.get().info()  # the fork server @distributed started in the background is ready
"""


@pytest.fixture
def jp_server_config(store, monkeypatch):
    """The demo's simulated GPUs (2), sampled every 0.1 s; idle GPU holders after 3 s, checked every 0.2 s."""
    monkeypatch.setenv("JUPYTER_AIR_GPU_SOURCE", "simulated")
    monkeypatch.setenv("JUPYTER_AIR_SIMULATED_GPUS", "2")
    monkeypatch.setenv("PYTHONPATH", str(REPO))
    air = {
        "sample_interval_seconds": 0.1,
        "idle_timeout_seconds": 60,
        "mlflow_ui_autostart": False,
        "fork_zygote_at_start": False,  # the session's AIR_HOME has one zygote, its kernels' (test_fork_zygote)
        "job_check_interval_seconds": 0,
        "idle_holder_minutes": IDLE_SECONDS / 60,
        "idle_holder_check_seconds": 0.2,
    }
    return {"ServerApp": {"jpserver_extensions": {"jupyter_air": True}}, "JupyterAir": air}


def _of(payload: dict, kernel_id: str) -> list[dict]:
    return [row for row in payload["processes"] if row["kernel_id"] == kernel_id]


async def _reply(client, msg_id: str, timeout: float) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        reply = await client.get_shell_msg(timeout=max(1.0, deadline - time.monotonic()))
        if reply["parent_header"].get("msg_id") == msg_id:
            return reply


async def test_the_panel_shows_a_notebooks_call_then_its_idle_kernel_as_an_idle_holder(jp_fetch, jp_serverapp, gpu):
    body = json.dumps({"path": "train.ipynb", "type": "notebook", "name": "train.ipynb", "kernel": {"name": "python3"}})
    session = json.loads((await jp_fetch("api", "sessions", method="POST", body=body)).body)
    kernel_id = session["kernel"]["id"]
    kernel = jp_serverapp.kernel_manager.get_kernel(kernel_id)
    kernel_pid, gpu_of_kernel = kernel.provisioner.pid, kernel.provisioner.pid % 2
    client = kernel.client()
    client.start_channels()
    try:
        await client.wait_for_ready(timeout=120)
        # Given a notebook that defined a @distributed function: its fork server runs, but no call ran
        reply = await client.execute_interactive(DEFINE, timeout=300)
        assert reply["content"]["status"] == "ok"
        assert _of(await gpu(refresh=True), kernel_id) == []

        # When it runs a call of 2 ranks (6 s each)
        msg_id = client.execute("pids = rank_pid.distributed(6.0)")
        # Then while the call runs, its ranks hold 12 GiB each on GPUs 0 and 1, which work, and its kernel 3 GiB on
        # the GPU its PID picks, each row naming the notebook
        deadline = time.monotonic() + 180
        while len(rows := _of(payload := await gpu(), kernel_id)) < 3:
            assert time.monotonic() < deadline, f"the call's ranks never showed: {payload['processes']}"
            await asyncio.sleep(0.1)
        by_pid = {row["pid"]: (row["gpu_index"], row["used_memory_bytes"], row["path"]) for row in rows}
        assert by_pid.pop(kernel_pid) == (gpu_of_kernel, HELD_BYTES, "train.ipynb")
        assert sorted(by_pid.values()) == [(0, RANK_BYTES, "train.ipynb"), (1, RANK_BYTES, "train.ipynb")]
        assert all(series[-1] >= WORKING_PERCENT for series in payload["gpus"]["utilization_percent"])
        assert (await _reply(client, msg_id, 300))["content"]["status"] == "ok"

        # And once it has ended and the notebook runs nothing more, the kernel is an idle holder of its GPU
        deadline = time.monotonic() + 60
        while not (holders := json.loads((await jp_fetch("jupyter-air", "gpu", "idle-holders")).body)["holders"]):
            assert time.monotonic() < deadline, "the idle kernel was never listed"
            await asyncio.sleep(0.2)
        (holder,) = [h for h in holders if h["kernel_id"] == kernel_id]
        assert (holder["path"], holder["gpu_index"]) == ("train.ipynb", gpu_of_kernel)
        assert (holder["used_memory_bytes"], holder["pids"]) == (HELD_BYTES, [kernel_pid])
        # And the panel shows it alone on that GPU, at 0 %, marked idle since the same time
        payload = await gpu(refresh=True)
        (row,) = _of(payload, kernel_id)
        assert (row["pid"], row["gpu_index"], row["idle_since_ms"]) == (
            kernel_pid,
            gpu_of_kernel,
            holder["idle_since_ms"],
        )
        assert payload["gpus"]["utilization_percent"][gpu_of_kernel][-1] == 0.0

        # When the kernel is shut down, Then its memory is free
        client.stop_channels()
        await jp_fetch("api", "sessions", session["id"], method="DELETE")
        session = None
        deadline = time.monotonic() + 30
        while [p for p in (await gpu(refresh=True))["processes"] if p["pid"] == kernel_pid]:
            assert time.monotonic() < deadline, "the kernel's simulated memory outlived it"
            await asyncio.sleep(0.2)
    finally:
        client.stop_channels()
        if session is not None:
            await jp_fetch("api", "sessions", session["id"], method="DELETE")
