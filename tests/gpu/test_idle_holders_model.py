"""The idle GPU holder check's judgement (`IdleHolders`) on made-up samples and kernels at made-up times, and its
server task with a failing cluster."""

from __future__ import annotations

import os
import subprocess
import sys

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


def test_each_ray_node_is_judged_on_its_own_gpus_from_its_first_sample_a_check_had():
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
    # Then a node counts from its first sample a check had (its GPUs were unknown before), each GPU on its own
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


def test_a_node_first_checked_late_counts_from_its_first_sample_not_from_the_check():
    # Given a kernel whose Ray actor holds 2 GiB on node c's idle GPU 0, whose sampler started at START + 5
    holders = IdleHolders(IDLE_SECONDS / 60, 1024, started_s=START)
    kernel = _kernel(101, active_at=START - 60)
    samples = [(int(at * 1000), _reading([0.0], [(0, 7001, 2 * GIB)])) for at in (START + 5, START + 8)]

    # When the first check that has node c runs at START + 10 (its answer: every sample since the sampler started)
    (row,) = holders.check([], [kernel], START + 10, [NodeHoldings("c" * 56, "gpu-c", samples, {7001: "kernel-101"})])

    # Then the GPU counts as watched, and idle, from its first sample, not from that check
    assert row["idle_since_ms"] == int((START + 5) * 1000)


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
