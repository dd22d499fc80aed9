"""The cost of one scheduler tick with 1,000 schedules (goal: at most 10 ms when none is due), side by side with a
naive tick that evaluates every schedule's expression (the baseline the due-time index replaces); and the cost of
claiming 1,000 due schedules in one transaction (all missed, `catchup: none`: recorded SKIPPED, no job started)."""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path

SCHEDULES = 1_000
TICKS = 200
GOAL_MS = 10.0


def _ms(values: list[float]) -> str:
    ordered = sorted(values)
    p99 = ordered[min(len(ordered) - 1, round(0.99 * (len(ordered) - 1)))]
    return f"median {statistics.median(values) * 1000:.2f} ms, p99 {p99 * 1000:.2f} ms"


def _store(folder: Path):
    from jupyter_air.workloads.jobs.jobs import Jobs, Resolved
    from jupyter_air.workloads.schedules.schedules import Schedules

    jobs = Jobs(folder / "air")
    schedules = Schedules(jobs)
    (folder / "w.yaml").write_text(
        "experiment_name: bench\ncommand: python -c pass\ncompute: {num_accelerators: 0}\n"
        "schedule: {quartz_cron_expression: '0 0 2 * * ?', timezone_id: Europe/Lisbon, catchup: none}\n"
    )
    base = jobs.resolve_file(folder / "w.yaml")
    for i in range(SCHEDULES):
        workload = {**base.workload, "experiment_name": f"bench-{i:04d}"}
        schedules.upsert(Resolved(workload, base.source, base.executor, []))
    return jobs


def _naive_tick(jobs, now: int) -> int:
    """Read every schedule and compute its next fire time from its expression (no due-time column)."""
    from jupyter_air.workloads.file.cron import as_ms, next_fires
    from jupyter_air.workloads.schedules.schedules import Schedules

    due = 0
    for schedule in Schedules(jobs).list():
        upcoming = next_fires(schedule.expression, schedule.timezone, schedule.updated_ms, 1)
        due += bool(upcoming and as_ms(upcoming[0]) <= now)
    return due


def main() -> None:
    from jupyter_air.workloads.schedules.tick import tick
    from jupyter_air.workloads.state.records import now_ms

    with tempfile.TemporaryDirectory() as tmp:
        started = time.perf_counter()
        jobs = _store(Path(tmp))
        print(f"{SCHEDULES} schedules recorded in {time.perf_counter() - started:.1f} s")
        idle, naive = [], []
        for _ in range(TICKS):
            began = time.perf_counter()
            assert tick(jobs) == []
            idle.append(time.perf_counter() - began)
        for _ in range(10):
            began = time.perf_counter()
            _naive_tick(jobs, now_ms())
            naive.append(time.perf_counter() - began)
        print(f"tick, none due, {SCHEDULES} schedules ({TICKS} ticks): {_ms(idle)}  (goal <= {GOAL_MS:.0f} ms)")
        print(f"baseline: naive tick evaluating every expression (10 ticks): {_ms(naive)}")
        print(f"ratio naive / tick (medians): {statistics.median(naive) / statistics.median(idle):.0f}x")
        late = now_ms() + 3 * 86_400_000  # three days on: every schedule missed 3 fires
        began = time.perf_counter()
        fires = tick(jobs, late)
        spent = time.perf_counter() - began
        skipped = sum(f.outcome == "SKIPPED" for f in fires)
        print(
            f"claiming {len(fires)} due schedules in one tick ({skipped} SKIPPED): {spent * 1000:.0f} ms in all, "
            f"{spent / max(1, len(fires)) * 1000:.2f} ms per schedule"
        )
        verdict = "met" if statistics.median(idle) * 1000 <= GOAL_MS else "NOT met"
        print(f"goal of <= {GOAL_MS:.0f} ms per idle tick with {SCHEDULES} schedules: {verdict}")
