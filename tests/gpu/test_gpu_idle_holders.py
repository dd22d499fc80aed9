"""Which notebook sits on GPU memory doing nothing: idle GPU holders, found by the server's own low-rate check."""

from __future__ import annotations

import asyncio
import getpass
import json
import time

import pytest

GIB = 1 << 30
IDLE_SECONDS = 2.0
START = 1_000_000.0


@pytest.fixture
def air_config():
    """A server whose sampling stops 0.5 s after its last GPU request, checking for idle holders every 0.2 s."""
    return {
        "sample_interval_seconds": 0.05,
        "idle_timeout_seconds": 0.5,
        "gpu_source": "nvml",
        "mlflow_ui_autostart": False,
        "idle_holder_minutes": IDLE_SECONDS / 60,
        "idle_holder_check_seconds": 0.2,
    }


async def _session(jp_fetch, path: str) -> dict:
    body = json.dumps({"path": path, "type": "notebook", "name": path, "kernel": {"name": "python3"}})
    return json.loads((await jp_fetch("api", "sessions", method="POST", body=body)).body)


async def test_the_server_lists_an_idle_kernel_not_a_busy_one_and_leaves_sampling_stopped(
    jp_fetch, jp_serverapp, fake_nvml, gpu, tmp_path, monkeypatch
):
    # Given two real kernels: one idle with 2 GiB on GPU 0 (and 512 MiB on GPU 1), one busy with 2 GiB on GPU 1
    monkeypatch.setenv("AIR_HOME", str(tmp_path / "air"))  # whose GPU ledger counts idle holds as use
    manager = jp_serverapp.kernel_manager
    idle, busy = await _session(jp_fetch, "idle.ipynb"), await _session(jp_fetch, "busy.ipynb")
    idle_pid = manager.get_kernel(idle["kernel"]["id"]).provisioner.pid
    busy_kernel = manager.get_kernel(busy["kernel"]["id"])
    client = busy_kernel.client()
    client.start_channels()
    try:
        await client.wait_for_ready(timeout=120)  # shell and IOPub connected: a reply sent before is lost
        heard = busy_kernel.last_activity
        while busy_kernel.last_activity == heard:  # until the server hears the kernel: a message it sends before
            await client.execute_interactive("pass", timeout=60)  # the server's subscription is up is lost (ZMQ)
        client.execute("import time; time.sleep(600)")
        while busy_kernel.execution_state != "busy":
            await asyncio.sleep(0.05)
        for device in fake_nvml.gpus:
            device.utilization_percent = 0
        fake_nvml.gpus[0].processes = [(idle_pid, 2 * GIB)]
        fake_nvml.gpus[1].processes = [(busy_kernel.provisioner.pid, 2 * GIB), (idle_pid, 512 << 20)]
        sampler = jp_serverapp.web_app.settings["jupyter_air_gpu"].sampler
        while sampler.sampling:  # no panel asks: sampling stops as idle
            await asyncio.sleep(0.05)
        samples_kept, reads = len(sampler), fake_nvml.calls["nvmlDeviceGetUtilizationRates"]

        # When nobody opens a panel and the idle-holders route is read until the idle kernel shows, and a while after
        answers = {}
        while len([a for a in answers.values() if a]) < 5:
            payload = json.loads((await jp_fetch("jupyter-air", "gpu", "idle-holders")).body)
            if payload["checked_ms"] is not None:
                answers[payload["checked_ms"]] = payload["holders"]
            await asyncio.sleep(0.05)

        # Then only the idle kernel's GPU 0 is listed, with its notebook, memory and when it went idle
        listed = [row for rows in answers.values() for row in rows]
        assert {(r["kernel_id"], r["gpu_index"]) for r in listed} == {(idle["kernel"]["id"], 0)}
        row = listed[0]
        assert row["path"] == "idle.ipynb" and row["used_memory_bytes"] == 2 * GIB and row["pids"] == [idle_pid]
        assert {r["idle_since_ms"] for r in listed} == {row["idle_since_ms"]}
        # And a check lists it exactly when IDLE_SECONDS have passed since it went idle: never before
        threshold_ms = row["idle_since_ms"] + IDLE_SECONDS * 1000
        assert {checked: bool(rows) for checked, rows in answers.items()} == {
            checked: checked >= threshold_ms for checked in answers
        }
        assert any(not rows for rows in answers.values())
        # And the checks read NVML themselves without resuming the panel's sampling
        assert not sampler.sampling and len(sampler) == samples_kept
        assert fake_nvml.calls["nvmlDeviceGetUtilizationRates"] > reads

        # And the idle kernel's time on GPU 0 counts as its user's GPU use in the ledger's fair share, from when it
        # went idle up to a check after the last one read (GPU 1's 512 MiB is too little to count)
        used = json.loads((await jp_fetch("jupyter-air", "gpu", "queue")).body)["recent_gpu_hours"]
        counted_ms = used[getpass.getuser()] * 3_600_000
        slack = 5  # ms: the hours are given to 6 decimals
        assert (
            max(answers) - row["idle_since_ms"] - slack
            <= counted_ms
            <= time.time() * 1000 - row["idle_since_ms"] + slack
        )

        # And the GPU panel's process list marks the idle holder's row
        processes = {(p["pid"], p["gpu_index"]): p for p in (await gpu(refresh=True))["processes"]}
        assert processes[(idle_pid, 0)]["idle_since_ms"] == row["idle_since_ms"]
        assert processes[(idle_pid, 1)]["idle_since_ms"] is None
        assert processes[(busy_kernel.provisioner.pid, 1)]["idle_since_ms"] is None
    finally:
        client.stop_channels()
        for session in (idle, busy):
            await jp_fetch("api", "sessions", session["id"], method="DELETE")


@pytest.mark.parametrize("air_config", [{"gpu_source": "nvml", "idle_holder_minutes": 0}])
async def test_the_check_can_be_turned_off(jp_fetch, air_config):
    # Given idle_holder_minutes = 0, When the route is read, Then it says the check is off
    payload = json.loads((await jp_fetch("jupyter-air", "gpu", "idle-holders")).body)
    assert payload["enabled"] is False and payload["holders"] == []
