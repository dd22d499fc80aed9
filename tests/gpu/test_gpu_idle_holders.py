"""Which notebook sits on GPU memory doing nothing: idle GPU holders, found by the server's own low-rate check."""

from __future__ import annotations

import asyncio
import getpass
import json
import os
import subprocess
import sys
import time

import pytest

from jupyter_air.gpu.idle import IdleHolders, KernelView, NodeHoldings
from jupyter_air.gpu.types import GpuProcess, Reading

GIB = 1 << 30
IDLE_SECONDS = 2.0
START = 1_000_000.0


def _reading(utilization: list[float | None], processes: list[tuple[int, int, int]]) -> Reading:
    """A sample of ``len(utilization)`` GPUs with ``(gpu, pid, bytes)`` processes."""
    reading = Reading.empty(len(utilization))
    reading.utilization_percent = list(utilization)
    reading.processes = [GpuProcess(gpu, pid, "python", used) for gpu, pid, used in processes]
    return reading


def _kernel(pid: int, busy: bool = False, active_at: float = START) -> KernelView:
    return KernelView(f"kernel-{pid}", pid, f"work/{pid}.ipynb", active_at, busy)


def _listed(holders: IdleHolders, samples, kernels, at: float) -> list[tuple[str, int]]:
    return [(h["kernel_id"], h["gpu_index"]) for h in holders.check(samples, kernels, at)]


def test_an_idle_holder_is_found_at_the_first_check_after_the_threshold_and_not_before():
    # Given a kernel holding 2 GiB on GPU 0, idle since START, on a GPU at 0 %, checked once a second
    holders = IdleHolders(IDLE_SECONDS / 60, 1024, started_s=START)
    kernel = _kernel(101)
    # When checks come before, at and after START + 2 s
    seen = {}
    for step in range(5):
        at = START + 0.5 + step * 0.5
        sample = [(int(at * 1000), _reading([0.0], [(0, 101, 2 * GIB)]))]
        seen[at] = _listed(holders, sample, [kernel], at)
    # Then no check before the threshold lists it, and every one from it on does
    assert {at: bool(rows) for at, rows in seen.items()} == {
        START + 0.5: False,
        START + 1.0: False,
        START + 1.5: False,
        START + 2.0: True,
        START + 2.5: True,
    }
    row = holders.holders()[0]
    assert row["kernel_id"] == "kernel-101" and row["path"] == "work/101.ipynb" and row["gpu_index"] == 0
    assert row["used_memory_bytes"] == 2 * GIB and row["pids"] == [101]
    assert row["idle_since_ms"] == int(START * 1000)


def test_a_gpu_that_worked_or_cannot_say_restarts_or_prevents_the_count():
    # Given two kernels holding memory on GPUs 0 and 1, both idle since START
    holders = IdleHolders(IDLE_SECONDS / 60, 1024, started_s=START)
    kernels = [_kernel(101), _kernel(102)]
    procs = [(0, 101, 2 * GIB), (1, 102, 2 * GIB)]
    # When GPU 0 showed 5 % one second in, and GPU 1 cannot report its utilization
    samples = [
        (int((START + 0.5) * 1000), _reading([0.0, None], procs)),
        (int((START + 1.0) * 1000), _reading([5.0, None], procs)),
        (int((START + 1.5) * 1000), _reading([0.0, None], procs)),
    ]
    # Then GPU 0's holder counts from its last busy sample, and GPU 1's is never idle
    assert _listed(holders, samples, kernels, START + 2.5) == []
    quiet = [(int((START + 3.0) * 1000), _reading([0.0, None], procs))]
    assert _listed(holders, quiet, kernels, START + 3.0) == [("kernel-101", 0)]
    assert holders.holders()[0]["idle_since_ms"] == int((START + 1.0) * 1000)


def test_busy_small_and_empty_kernels_are_never_listed_and_children_count_for_their_kernel():
    # Given a busy kernel, one under the memory threshold, one with 0 bytes, and this process's child on GPU 1
    holders = IdleHolders(IDLE_SECONDS / 60, 1024, started_s=START)
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        kernels = [_kernel(101, busy=True), _kernel(102), _kernel(103), _kernel(os.getpid())]
        procs = [(0, 101, 4 * GIB), (0, 102, 1000 << 20), (0, 103, 0), (1, child.pid, 600 << 20)]
        procs.append((1, os.getpid(), 600 << 20))
        sample = [(int((START + 10) * 1000), _reading([0.0, 0.0], procs))]
        # When checked long after the threshold
        rows = holders.check(sample, kernels, START + 10)
    finally:
        child.kill()
        child.wait()
    # Then only the kernel whose own and child's memory add up past 1024 MiB is listed, with both pids
    assert [(r["kernel_id"], r["gpu_index"], r["used_memory_bytes"]) for r in rows] == [
        (f"kernel-{os.getpid()}", 1, 1200 << 20)
    ]
    assert sorted(rows[0]["pids"]) == sorted([child.pid, os.getpid()])


def test_each_ray_node_is_judged_on_its_own_gpus_from_when_a_check_first_had_it():
    # Given a kernel whose Ray actors hold 2 GiB on node a's GPU 1 (at 0 %) and on node b's GPU 1 (working once)
    holders = IdleHolders(IDLE_SECONDS / 60, 1024, started_s=START)
    kernel = _kernel(101, active_at=START - 60)

    def nodes(at: float, b_percent: float = 0.0, with_a: bool = True) -> list[NodeHoldings]:
        stamp = int(at * 1000)
        a = NodeHoldings(
            "a" * 56, "gpu-a", [(stamp, _reading([50.0, 0.0], [(1, 5001, 2 * GIB)]))], {5001: "kernel-101"}
        )
        b = NodeHoldings(
            "b" * 56, "gpu-b", [(stamp, _reading([0.0, b_percent], [(1, 6001, 2 * GIB)]))], {6001: "kernel-101"}
        )
        return [a, b] if with_a else [b]

    def listed(at: float, **kwargs) -> list[tuple[str, int]]:
        return [(h["node"], h["gpu_index"]) for h in holders.check([], [kernel], at, nodes(at, **kwargs))]

    # When checks run from START on, node b's GPU 1 working at START + 1
    # Then a node counts from the first check that had it (its GPUs were unknown before), each GPU on its own
    assert listed(START) == []
    assert listed(START + 1, b_percent=30.0) == []
    assert listed(START + 2) == [("gpu-a", 1)]
    assert listed(START + 3) == [("gpu-a", 1), ("gpu-b", 1)]
    row = holders.holders()[1]
    assert row["node_id"] == "b" * 56 and row["pids"] == [6001] and row["idle_since_ms"] == int((START + 1) * 1000)
    # And the panel's process rows of node b are marked with the kernel and notebook they work for
    (marked,) = holders.mark([{"gpu_index": 1, "pid": 6001, "kernel_id": None, "path": None}], False, "b" * 56)
    assert marked["kernel_id"] == "kernel-101" and marked["path"] == "work/101.ipynb" and marked["idle_since_ms"]
    # And a node a check goes without (no actor of the kernel there any more) is counted afresh when it comes back
    assert listed(START + 4, with_a=False) == [("gpu-b", 1)]
    assert listed(START + 5) == [("gpu-b", 1)]
    assert listed(START + 7) == [("gpu-a", 1), ("gpu-b", 1)]


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


def test_a_process_of_no_kernel_is_looked_up_once_while_the_kernels_stay_the_same(monkeypatch):
    # Given a GPU shared by a kernel's child and a process of no kernel (another user's training)
    from jupyter_air.gpu import idle

    looked_up = []
    children = {202: 101}  # pid -> its kernel's pid

    def kernel_of(pid, kernel_pids):
        looked_up.append(pid)
        return kernel_pids.get(pid) or kernel_pids.get(children.get(pid))

    monkeypatch.setattr(idle, "kernel_of", kernel_of)
    holders = IdleHolders(IDLE_SECONDS / 60, 1024, started_s=START)
    at = START + 10
    sample = [(int(at * 1000), _reading([0.0], [(0, 202, 2 * GIB), (0, 999, 4 * GIB)]))]
    # When three checks run with the same kernels
    for step in range(3):
        rows = _listed(holders, sample, [_kernel(101)], at + step)
    # Then the outsider's ancestors were looked up at the first check only, and the kernel is still found
    assert looked_up.count(999) == 1 and looked_up.count(202) == 3
    assert rows == [("kernel-101", 0)]
    # And once another kernel starts, the outsider is looked up again (it might be that kernel's child)
    children[999] = 303
    assert _listed(holders, sample, [_kernel(101), _kernel(303)], at + 5) == [("kernel-101", 0), ("kernel-303", 0)]
    assert looked_up.count(999) == 2


async def test_a_ray_error_leaves_the_nodes_out_of_the_check_said_once_not_the_servers_own_node():
    # Given the check of a server whose Ray cluster's tables cannot be read (a GCS error, not an unreachable cluster)
    import logging

    from jupyter_air.server.tasks import IdleHolderChecks

    class Failing:
        async def holdings(self, kernel_pids, since):
            raise RuntimeError("GCS RPC failed")

    records = []
    log = logging.getLogger("air-test-idle")
    log.addHandler(handler := logging.Handler())
    handler.emit = records.append
    checks = IdleHolderChecks(None, None, None, None, 60, log, cluster=Failing())
    try:
        # When two checks ask for the nodes' part
        parts = [await checks._nodes([_kernel(101)]), await checks._nodes([_kernel(101)])]
    finally:
        log.removeHandler(handler)
    # Then both go on without the nodes, and the failure is said once
    assert parts == [[], []]
    assert [r.getMessage() for r in records] == [
        "jupyter_air: the idle GPU holder check of the Ray nodes failed: GCS RPC failed"
    ]
