"""The GPU queue's costs: what admission adds to a notebook call that finds its GPUs free (goal ≤ 20 ms), and
re-ordering a queue of 1,000 claims by fair share (goal ≤ 10 ms), each the median of many rounds.

Baseline for admission: the same look on a machine without GPUs (``JUPYTER_AIR_GPU_SOURCE=none``), where a call
takes nothing from the ledger. Admission runs on 2 simulated GPUs in a fresh AIR_HOME, 20 jobs of other users
holding no GPU but queued (a busy morning), and gives the GPU back after each round."""

from __future__ import annotations

import os
import random
import statistics
import tempfile
import time

ROUNDS, QUEUED, USERS = 200, 1000, 40


def _median_ms(function, rounds: int) -> float:
    times = []
    for _ in range(rounds):
        started = time.perf_counter()
        function()
        times.append(time.perf_counter() - started)
    return statistics.median(times) * 1000


def admission(source: str) -> float:
    """Median ms of taking 1 GPU for a call and giving it back, with the GPU source ``source``."""
    from jupyter_air.training import gpu_claim
    from jupyter_air.workloads.state.fair_share import Claim
    from jupyter_air.workloads.state.ledger import GpuLedger
    from jupyter_air.workloads.state.store import JobStore

    with tempfile.TemporaryDirectory() as home:
        os.environ.update({"AIR_HOME": home, "JUPYTER_AIR_GPU_SOURCE": "simulated"})
        ledger = GpuLedger(JobStore(home))
        ledger.claim(Claim("holder", "job", "bob", "job-holder", 2), [0, 1])  # holds both: the queue waits
        for n in range(20):
            ledger.claim(Claim(f"job-{n}", "job", f"user{n % 3}", f"job-{n}", 2), [0, 1])
        ledger.release("holder")  # free again, the queued ones not yet looking: a call finds GPUs free
        for n in range(20):
            ledger.release(f"job-{n}")
        os.environ["JUPYTER_AIR_GPU_SOURCE"] = source

        def take_and_give_back():
            gpu_claim.take(1, 1, "bench", True, lambda what: None).release()

        return _median_ms(take_and_give_back, ROUNDS)


def reorder() -> tuple[float, float]:
    """Median ms of ordering 1,000 queued claims of 40 users by their recent GPU-hours, and of the ledger's whole
    look at that queue in its SQLite store (drop gone processes, sum 5,000 past holds per user, read, order)."""
    from jupyter_air.workloads.state import fair_share
    from jupyter_air.workloads.state.fair_share import Claim, Use
    from jupyter_air.workloads.state.ledger import GpuLedger
    from jupyter_air.workloads.state.quota import Quota
    from jupyter_air.workloads.state.store import JobStore

    rng, now = random.Random(1), int(time.time() * 1000)
    claims = []
    for n in range(QUEUED):
        user, count, submitted = f"user{rng.randrange(USERS)}", rng.choice([1, 2, 4]), now - rng.randrange(86_400_000)
        claims.append(Claim(f"c{n}", "job", user, f"job-{n}", count, submitted))
    uses = [Use(f"user{rng.randrange(USERS)}", 1, now - rng.randrange(90_000_000), now) for _ in range(5000)]

    hours = fair_share.recent_gpu_hours(uses, now)

    def order():
        fair_share.order(claims, hours)

    pure = _median_ms(order, 100)
    with tempfile.TemporaryDirectory() as home:
        ledger = GpuLedger(JobStore(home), Quota())
        with ledger.store.transaction(immediate=True) as db:
            db.executemany(
                "INSERT INTO gpu_claims (claim_id, kind, user, label, count, submitted_ms, pid, pid_started)"
                " VALUES (?,?,?,?,?,?,?,NULL)",
                [(c.claim_id, c.kind, c.user, c.label, c.count, c.submitted_ms, os.getpid()) for c in claims],
            )
            db.executemany(
                "INSERT INTO gpu_use (user, gpus, start_ms, end_ms) VALUES (?,?,?,?)",
                [(u.user, u.gpus, u.start_ms, u.end_ms) for u in uses],
            )
        whole = _median_ms(ledger.queue, 30)
    return pure, whole


def main() -> None:
    free, none, auto = admission("simulated"), admission("none"), admission("auto")
    print(f"a call on a machine without GPUs (baseline, takes nothing): {none:.2f} ms")
    print(f"  the same with the default source looking for NVML (no driver here): {auto:.2f} ms")
    print(f"admission of a call finding 1 of 2 GPUs free, taken and given back: {free:.2f} ms")
    print(f"  added to the call: {free - none:.2f} ms (goal <= 20 ms: {(free - none) / 20:.0%} of it)")
    pure, whole = reorder()
    print(f"re-ordering {QUEUED} queued claims of {USERS} users by fair share: {pure:.2f} ms (goal <= 10 ms)")
    print(f"  the ledger's whole look at that queue in SQLite: {whole:.2f} ms")
