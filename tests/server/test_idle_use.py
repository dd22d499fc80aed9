"""Idle GPU holders count as use: the time a kernel sits idle on a GPU is its user's use in the ledger's fair share."""

from __future__ import annotations

from jupyter_air.server.idle_use import IdleUse
from jupyter_air.workloads.state.fair_share import Claim
from jupyter_air.workloads.state.ledger import GpuLedger
from jupyter_air.workloads.state.quota import Quota
from jupyter_air.workloads.state.store import JobStore

HOUR_MS = 3_600_000
NOW = 1_000 * HOUR_MS


def _holder(gpu: int, since_ms: int, node_id: str | None = None) -> dict:
    return {"kernel_id": f"k{gpu}", "gpu_index": gpu, "idle_since_ms": since_ms, "node_id": node_id}


def test_each_gpu_held_idle_counts_once_from_when_it_went_idle(tmp_path):
    # Given alice's server whose ledger is AIR_HOME's, and two kernels idle on GPU 0 (one since 2 h ago) and one on
    # GPU 1 (since 1 h ago), and a Ray node's idle holder (that node's GPUs are not this ledger's)
    ledger = GpuLedger(JobStore(tmp_path), Quota(), clock=lambda: NOW)
    use = IdleUse(lambda: ledger, "alice")
    holders = [_holder(0, NOW - 2 * HOUR_MS), _holder(0, NOW - HOUR_MS), _holder(1, NOW - HOUR_MS)]
    holders.append(_holder(0, NOW - 5 * HOUR_MS, node_id="ray-node"))

    # When the check finds them now, then again half an hour later with GPU 1's kernel gone, then GPU 1 idle again
    first = use.record(holders, NOW)
    second = use.record(holders[:2], NOW + HOUR_MS // 2)
    third = use.record([_holder(1, NOW + HOUR_MS // 2)], NOW + HOUR_MS)

    # Then each GPU counts from its first idle holder on, once: no span counted twice, none of the Ray node's
    assert first == [(1, NOW - 2 * HOUR_MS, NOW), (1, NOW - HOUR_MS, NOW)]
    assert second == [(1, NOW, NOW + HOUR_MS // 2)]
    assert third == [(1, NOW + HOUR_MS // 2, NOW + HOUR_MS)]
    assert use.record([], NOW + 2 * HOUR_MS) == []
    # And the ledger weighs 4 GPU-hours of alice's
    later = GpuLedger(JobStore(tmp_path), Quota(), clock=lambda: NOW + HOUR_MS)
    assert later.describe()["recent_gpu_hours"] == {"alice": 4.0}


def test_a_user_whose_kernel_sat_idle_on_a_gpu_waits_behind_one_who_did_not(tmp_path):
    # Given carol's job holding the only GPU, alice's kernel having sat idle on it for an hour before, and then
    # alice's and bob's calls queued, alice's first
    ledger = GpuLedger(JobStore(tmp_path), Quota(), clock=lambda: NOW)
    IdleUse(lambda: ledger, "alice").record([_holder(0, NOW - 2 * HOUR_MS)], NOW - HOUR_MS)
    ledger.claim(Claim("c", "job", "carol", "job-c", 1), [0])
    ledger.claim(Claim("a", "call", "alice", "train", 1), [0])
    ledger.claim(Claim("b", "call", "bob", "train", 1), [0])

    # When the queue is asked, Then bob, who used no GPU, goes first: alice's idle hour counts as use
    _, queued = ledger.queue()
    assert [claim.user for claim in queued] == ["bob", "alice"]
