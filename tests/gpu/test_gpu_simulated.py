"""The simulated GPUs' numbers when processes of this user ran ``.distributed()`` calls (given here, not scanned)."""

from __future__ import annotations

from jupyter_air.gpu.callers import Caller
from jupyter_air.gpu.simulated import HELD_BYTES, RANK_BYTES, WORKING_PERCENT, SimulatedSource

GIB = 1 << 30


def _source(count: int, users: list[Caller]) -> SimulatedSource:
    source = SimulatedSource(count, seed=7, users=lambda: users, rescan_seconds=0)
    source.open()
    return source


def _rows(reading) -> list[tuple[int, int, str | None, int | None]]:
    return [(p.gpu_index, p.pid, p.name, p.used_memory_bytes) for p in reading.processes]


def test_an_idle_caller_holds_its_memory_on_the_gpu_its_pid_picks_at_0_percent():
    # Given a kernel (pid 101) that ran a call, none running now, on 2 simulated GPUs
    source = _source(2, [Caller(101, "python")])
    # When the GPUs are read a few times
    readings = [source.read() for _ in range(5)]
    # Then GPU 1 (101 mod 2) lists the kernel holding 3 GiB, at 0 %, idle temperature and power, every time
    for reading in readings:
        assert _rows(reading) == [(1, 101, "python", HELD_BYTES)]
        assert HELD_BYTES == 3 * GIB
        assert reading.utilization_percent[1] == 0.0 and reading.memory_used_bytes[1] == HELD_BYTES
        assert reading.temperature_celsius[1] == 34.0 and reading.power_watts[1] == 70.0
    # And GPU 0, which nobody here uses, keeps its made-up drifting load, without a process
    assert len({r.utilization_percent[0] for r in readings}) > 1
    assert all(r.memory_used_bytes[0] > 0 for r in readings)


def test_the_ranks_of_a_running_call_hold_memory_and_make_their_gpus_work():
    # Given a kernel (pid 101) whose call runs 3 ranks, on 2 simulated GPUs
    ranks = ((201, "python3"), (202, "python3"), (203, "python3"))
    source = _source(2, [Caller(101, "python", ranks)])
    # When the GPUs are read
    reading = source.read()
    # Then rank k holds 12 GiB on GPU k mod 2, beside the kernel's 3 GiB on GPU 1
    assert _rows(reading) == [
        (1, 101, "python", HELD_BYTES),
        (0, 201, "python3", RANK_BYTES),
        (1, 202, "python3", RANK_BYTES),
        (0, 203, "python3", RANK_BYTES),
    ]
    assert reading.memory_used_bytes == [2 * RANK_BYTES, HELD_BYTES + RANK_BYTES]
    # And both GPUs work: at least 40 %, warmer and drawing more power than idle ones
    assert all(WORKING_PERCENT <= u <= 100 for u in reading.utilization_percent)
    assert all(t > 34.0 for t in reading.temperature_celsius) and all(w > 70.0 for w in reading.power_watts)


def test_each_kernel_holds_its_own_memory_and_a_gpu_only_held_stays_at_0_percent():
    # Given two idle kernels on GPU 1 of 4 (pids 5 and 9), and a third (pid 6) whose call's one rank works on GPU 0
    users = [Caller(5, "python"), Caller(6, "python", ((301, "python"),)), Caller(9, "python")]
    source = _source(4, users)
    # When the GPUs are read
    reading = source.read()
    # Then each kernel is one row of 3 GiB, GPU 1 sums the two idle kernels' memory at 0 %, GPU 2 holds kernel 6's
    assert [(gpu, pid, used) for gpu, pid, _, used in _rows(reading)] == [
        (1, 5, HELD_BYTES),
        (2, 6, HELD_BYTES),
        (0, 301, RANK_BYTES),
        (1, 9, HELD_BYTES),
    ]
    assert reading.memory_used_bytes[:3] == [RANK_BYTES, 2 * HELD_BYTES, HELD_BYTES]
    assert reading.utilization_percent[1] == 0.0 and reading.utilization_percent[2] == 0.0
    assert reading.utilization_percent[0] >= WORKING_PERCENT
    # And GPU 3, which nobody here uses, shows no process
    assert not [p for p in reading.processes if p.gpu_index == 3] and reading.memory_used_bytes[3] > 0


def test_a_caller_gone_frees_its_memory_at_the_next_read():
    # Given a kernel that ran a call, then ended
    users = [Caller(101, "python")]
    source = _source(2, users)
    assert source.read().memory_used_bytes[1] == HELD_BYTES
    users.clear()
    # When the GPUs are read again, Then nothing is listed and GPU 1 drifts again
    reading = source.read()
    assert reading.processes == [] and reading.memory_used_bytes[1] != HELD_BYTES


def test_the_processes_are_looked_through_at_most_once_a_second():
    # Given the simulated GPUs as the server opens them, counting the looks through this user's processes
    looks = []
    source = SimulatedSource(2, users=lambda: looks.append(1) or [Caller(101, "python")])
    source.open()
    # When they are read 5 times at once, Then one look served every read
    readings = [source.read() for _ in range(5)]
    assert len(looks) == 1 and all(r.processes == readings[0].processes for r in readings)
