"""The machine's GPU ledger in a real job store: no GPU given twice, fair share between users, quotas, restarts."""

from __future__ import annotations

import random
import subprocess
import sys

import pytest

from jupyter_air.workloads.state.fair_share import Claim
from jupyter_air.workloads.state.ledger import GpuLedger, NoSuchGpus
from jupyter_air.workloads.state.quota import Quota, QuotaExceeded
from jupyter_air.workloads.state.store import JobStore

HOUR_MS = 3_600_000
GPUS = [0, 1]


class Clock:
    """The ledger's clock, moved by the test (a simulated day takes no time)."""

    def __init__(self):
        self.ms = 1_800_000_000_000

    def __call__(self) -> int:
        return self.ms


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def ledger(tmp_path, clock) -> GpuLedger:
    return GpuLedger(JobStore(tmp_path / "home"), Quota(), clock)


def claim(user: str, n: int, count: int = 1, kind: str = "job", pool: str = "") -> Claim:
    return Claim(f"{user}-{n}", kind, user, f"{kind}-{user}-{n}", count, pool=pool)


def jain(values: list[float]) -> float:
    return sum(values) ** 2 / (len(values) * sum(v * v for v in values))


def test_three_users_mixing_jobs_and_calls_never_share_a_gpu(ledger, clock):
    # Given three users claiming 1 or 2 of 2 GPUs, as jobs and notebook calls, releasing at random
    rng, open_claims = random.Random(7), []
    for step in range(300):
        clock.ms += 60_000
        if open_claims and rng.random() < 0.45:
            ledger.release(open_claims.pop(rng.randrange(len(open_claims))).claim_id)
        else:
            user = rng.choice(["alice", "bob", "carol"])
            open_claims.append(claim(user, step, rng.choice([1, 1, 2]), rng.choice(["job", "call"])))
        for c in open_claims:  # every waiting claim looks again, as its process does
            ledger.claim(c, GPUS)

        # Then no GPU is ever held by two claims, and a GPU is free only while nothing that fits waits
        held, queued = ledger.queue()
        given = [g for c in held for g in c.gpus]
        assert len(given) == len(set(given)) and set(given) <= set(GPUS)
        assert not queued or queued[0].count > len(GPUS) - len(given)


def test_equal_demand_ends_fair_even_against_a_user_who_queued_a_day_of_work_first(ledger, clock):
    # Given alice's 60 one-hour jobs (more than the 2 GPUs run in a day) queued before bob and carol keep two each in
    # line
    waiting = {f"alice-{n}": claim("alice", n) for n in range(60)}
    for c in waiting.values():
        ledger.claim(c, GPUS)
    counter, held_since, hours = 0, {}, {"alice": 0.0, "bob": 0.0, "carol": 0.0}

    # When a simulated day goes by in 30-minute steps, every hold lasting an hour
    for _ in range(24 * 2):
        for user in ("bob", "carol"):
            while sum(1 for c in waiting.values() if c.user == user) < 2:
                counter += 1
                waiting[f"{user}-{counter}"] = claim(user, counter)
        for claim_id, c in list(waiting.items()):
            if ledger.claim(c, GPUS).gpus is not None:
                held_since[claim_id] = (c.user, clock.ms)
                del waiting[claim_id]
        clock.ms += HOUR_MS // 2
        for claim_id, (user, since) in list(held_since.items()):
            if clock.ms - since >= HOUR_MS:
                ledger.release(claim_id)
                hours[user] += 1
                del held_since[claim_id]

    # Then the GPU-hours end within a Jain fairness index of 0.9 (first come first served gives alice every one)
    assert sum(hours.values()) >= 44
    assert jain(list(hours.values())) >= 0.9, hours


def test_the_least_recent_user_goes_first_and_a_users_claims_keep_their_order(ledger, clock):
    # Given alice held both GPUs for the last hour, then queued two claims before bob queued his
    first = [ledger.claim(claim("alice", n), GPUS) for n in (0, 1)]
    assert [a.gpus for a in first] == [(0,), (1,)]
    clock.ms += HOUR_MS
    for c in (claim("alice", 2), claim("alice", 3, count=2), claim("bob", 4, count=2)):
        assert ledger.claim(c, GPUS).gpus is None

    # When the queue is ordered, Then bob is first (no recent use), and alice's claims in the order they came
    held, queued = ledger.queue()
    assert [c.claim_id for c in queued] == ["bob-4", "alice-2", "alice-3"]

    # And the waiting claims say their place in line and who holds the GPUs since when
    admission = ledger.claim(claim("bob", 4, count=2), GPUS)
    assert admission.position == 1
    assert admission.reason.startswith("1st in line for 2 GPUs; held by alice's job job-alice-0 since ")
    assert "(GPU 0)" in admission.reason and "job-alice-1" in admission.reason
    assert ledger.claim(claim("alice", 3, count=2), GPUS).reason.startswith("3rd in line for 2 GPUs")

    # When one GPU frees, the 2-GPU head of the line is not passed by alice's 1-GPU claim behind it
    ledger.release("alice-0")
    assert ledger.claim(claim("alice", 2), GPUS).gpus is None
    ledger.release("alice-1")
    assert ledger.claim(claim("bob", 4, count=2), GPUS).gpus == (0, 1)


def test_quotas_refuse_with_the_quota_named_and_hold_a_user_at_their_gpus_while_others_pass(tmp_path, clock):
    ledger = GpuLedger(JobStore(tmp_path / "home"), Quota(gpus=1, queued=2), clock)

    # A claim for more GPUs at once than the quota is refused, naming the quota and its setting
    with pytest.raises(QuotaExceeded, match=r"over the quota of 1 GPU\(s\) at once per user \(AIR_GPU_QUOTA\)"):
        ledger.claim(claim("alice", 0, count=2), GPUS)

    # A user holding their quota waits, and another user's claim behind theirs passes
    assert ledger.claim(claim("alice", 1), GPUS).gpus == (0,)
    waits = ledger.claim(claim("alice", 2), GPUS)
    assert waits.gpus is None and "would pass the quota of 1 at once (AIR_GPU_QUOTA)" in waits.reason
    assert ledger.claim(claim("bob", 3), GPUS).gpus == (1,)

    # A third queued claim of alice's is refused by the queue quota
    ledger.claim(claim("alice", 4), GPUS)
    with pytest.raises(QuotaExceeded, match=r"alice has 2 claim\(s\) waiting .* \(AIR_QUEUE_QUOTA=2\)"):
        ledger.claim(claim("alice", 5), GPUS)
    held, queued = ledger.queue()
    assert [c.claim_id for c in queued] == ["alice-2", "alice-4"]
    # And the queue as shown (air queue, the GPU panel) gives the same reason as the claimant sees
    assert "would pass the quota of 1 at once (AIR_GPU_QUOTA)" in ledger.describe()["queued"][0]["reason"]


def test_more_gpus_than_the_machine_has_is_refused_at_once(ledger):
    with pytest.raises(NoSuchGpus, match=r"3 GPU\(s\) asked for but this machine has 2"):
        ledger.claim(claim("alice", 0, count=3), GPUS)
    assert ledger.queue() == ([], [])


def test_a_gpu_the_admin_shares_goes_to_several_claims_once_the_others_are_taken(ledger, monkeypatch):
    # Given GPU 1 of 2 shared by the admin, and alice's job holding GPU 0
    monkeypatch.setenv("AIR_SHARED_GPUS", " 1 ,")
    assert ledger.claim(claim("alice", 1), GPUS).gpus == (0,)

    # When bob's and carol's 1-GPU calls, then dave's 2-GPU job, ask
    bob, carol = ledger.claim(claim("bob", 1, kind="call"), GPUS), ledger.claim(claim("carol", 1, kind="call"), GPUS)
    dave = ledger.claim(claim("dave", 1, count=2), GPUS)

    # Then bob and carol both get the shared GPU; dave waits for GPU 0, which is nobody's to share
    assert (bob.gpus, carol.gpus, dave.gpus) == ((1,), (1,), None)
    assert dave.reason.startswith("1st in line for 2 GPUs; held by alice's job job-alice-1")
    assert ledger.describe()["shared_gpus"] == [1]
    # And once alice's job ends, dave gets GPU 0 and the shared one beside bob's and carol's calls
    ledger.release("alice-1")
    assert ledger.claim(claim("dave", 1, count=2), GPUS).gpus == (0, 1)

    # And a shared GPU that is no index is refused, saying what to set
    monkeypatch.setenv("AIR_SHARED_GPUS", "1,gpu2")
    with pytest.raises(ValueError, match=r"AIR_SHARED_GPUS='1,gpu2': expected GPU indexes separated by commas"):
        ledger.claim(claim("erin", 1), GPUS)


def test_a_restart_keeps_the_queue_and_frees_the_gpus_of_work_killed_with_sigkill(tmp_path, clock):
    # Given a claim held by a process, and another queued behind it
    holder = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        ledger = GpuLedger(JobStore(tmp_path / "home"), Quota(), clock)
        assert ledger.claim(claim("alice", 0, count=2), GPUS, pid=holder.pid).gpus == (0, 1)
        assert ledger.claim(claim("bob", 1, count=2), GPUS).gpus is None

        # When the holder is killed with SIGKILL and the ledger is opened again (a restarted service)
        holder.kill()
        holder.wait()
        clock.ms += HOUR_MS
        reopened = GpuLedger(JobStore(tmp_path / "home"), Quota(), clock)

        # Then the queued claim is still there and gets the GPUs, and the dead hold counts as alice's use
        assert reopened.claim(claim("bob", 1, count=2), GPUS).gpus == (0, 1)
        held, queued = reopened.queue()
        assert [c.claim_id for c in held] == ["bob-1"] and queued == []
        reopened.claim(claim("alice", 2), GPUS)
        reopened.claim(claim("carol", 3), GPUS)
        assert [c.user for c in reopened.queue()[1]] == ["carol", "alice"]
    finally:
        holder.kill()
        holder.wait()


def test_a_ray_clusters_gpus_are_a_pool_of_their_own_with_the_same_order(ledger, clock):
    # Given alice holding this machine's 2 GPUs and bob 2 of a 4-GPU Ray cluster's
    cluster, slots = "Ray cluster 127.0.0.1:6379", range(4)
    assert ledger.claim(claim("alice", 0, count=2), GPUS).gpus == (0, 1)
    assert ledger.claim(claim("bob", 1, count=2, pool=cluster), slots).gpus is not None

    # When carol asks the cluster for 2 more and then 1, and for 1 of this machine's
    assert ledger.claim(claim("carol", 2, count=2, pool=cluster, kind="call"), slots).gpus is not None
    waits = ledger.claim(claim("carol", 3, pool=cluster), slots)
    local = ledger.claim(claim("carol", 4), GPUS)

    # Then the cluster's GPUs went to the first two claims whatever this machine's hold, and each line is its own:
    # carol is 1st in both, told who holds the pool she waits for (a count: Ray places the GPUs)
    assert (waits.gpus, waits.position, local.gpus, local.position) == (None, 1, None, 1)
    assert waits.reason.startswith("1st in line for 1 GPU; held by bob's job job-bob-1 since ")
    assert f"(2 of {cluster})" in waits.reason and "alice" not in waits.reason
    assert "held by alice's job job-alice-0" in local.reason and cluster not in local.reason
    described = ledger.describe()
    assert [(c["user"], c["pool"], c["gpus"]) for c in described["held"]] == [
        ("alice", "", [0, 1]),
        ("bob", cluster, []),
        ("carol", cluster, []),
    ]
    assert [(c["claim_id"], c["position"]) for c in described["queued"]] == [("carol-3", 1), ("carol-4", 1)]
    with pytest.raises(NoSuchGpus, match=f"5 GPU\\(s\\) asked for but {cluster} has 4"):
        ledger.claim(claim("dave", 5, count=5, pool=cluster), slots)
