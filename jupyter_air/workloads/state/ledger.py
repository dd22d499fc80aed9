"""The GPU ledger of this machine, in the job store: who holds which GPU, who waits for how many, and in what order.

Every piece of work that uses GPUs (a job's attempts, a notebook call) claims them here and is given them only when
they are free and its turn has come (:mod:`~jupyter_air.workloads.state.fair_share`); no GPU is given to two claims.
A claim names the process that waits for or holds it: a claim whose process is gone (killed, its machine restarted)
is dropped by the next look at the ledger, once no process of its work is left, so nothing holds a GPU for work
that is gone and no GPU is given while work that was killed halfway still runs on it.

A Ray cluster's GPUs are a pool of their own in the same ledger (a claim's ``pool`` names the cluster): its claims
are admitted by the same order and quotas against the cluster's GPU count, and Ray then places what was admitted on
its nodes. The fair share counts a user's use on this machine and on clusters alike.
"""

from __future__ import annotations

import dataclasses
import json
import os
import sqlite3
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from jupyter_air import procs
from jupyter_air.workloads.state import fair_share
from jupyter_air.workloads.state.fair_share import Claim, Use
from jupyter_air.workloads.state.quota import GPU_QUOTA_ENV, Quota, QuotaExceeded, shared_gpus
from jupyter_air.workloads.state.records import JOB_MARKER, now_ms
from jupyter_air.workloads.state.store import JobStore


class NoSuchGpus(ValueError):
    """A claim for more GPUs than the machine (or the Ray cluster) has: it could never be given."""


@dataclass(frozen=True)
class Admission:
    """A claim's state: ``gpus`` once given, else its ``position`` in the queue (1: next) and ``reason``."""

    gpus: tuple[int, ...] | None
    position: int = 0
    reason: str = ""


class GpuLedger:
    """The ledger in ``store``'s database, with the admin's ``quota`` per user."""

    def __init__(self, store: JobStore, quota: Quota | None = None, clock: Callable[[], int] = now_ms):
        self.store = store
        self._quota = quota
        self.clock = clock  # milliseconds since the epoch

    @property
    def quota(self) -> Quota:
        """The quota given, else the admin's from the environment (read when a claim needs it)."""
        return Quota.from_environment() if self._quota is None else self._quota

    def claim(self, claim: Claim, indexes: Sequence[int], pid: int | None = None) -> Admission:
        """Queue ``claim`` (once, as it comes now; a later call for the same id looks again) for GPUs among
        ``indexes`` of its pool (a Ray cluster's: one per GPU of the cluster), held by process ``pid`` (default:
        this one); gives it its GPUs when they are free and its turn has come."""
        pid, quota = os.getpid() if pid is None else pid, self.quota
        with self.store.transaction(immediate=True) as db:
            claims = _sweep(db, self.clock())
            if claim.claim_id not in {c.claim_id for c in claims}:
                self._check(claim, claims, indexes, quota)
                claim = dataclasses.replace(claim, submitted_ms=self.clock())
                db.execute(
                    "INSERT INTO gpu_claims (claim_id, kind, user, label, count, submitted_ms, pool, pid, pid_started)"
                    " VALUES (?,?,?,?,?,?,?,?,?)",
                    (*_columns(claim), pid, procs.start_time(pid)),
                )
                claims.append(claim)
            return self._admit(db, claims, indexes, claim.claim_id, quota.gpus)

    def release(self, claim_id: str) -> None:
        """End the claim (queued or held): its GPUs go to the next in line."""
        with self.store.transaction(immediate=True) as db:
            _drop(db, claim_id, self.clock())

    def record_use(self, user: str, spans: Sequence[tuple[int, int, int]]) -> None:
        """Count ``(GPUs, start ms, end ms)`` spans as ``user``'s use though no claim held them (a kernel idle on
        GPU memory): the fair share weighs them as it weighs ended holds."""
        with self.store.transaction(immediate=True) as db:
            rows = [(user, *span) for span in spans]
            db.executemany("INSERT INTO gpu_use (user, gpus, start_ms, end_ms) VALUES (?,?,?,?)", rows)

    def waiting(self, user: str) -> int:
        """How many of ``user``'s claims wait in line."""
        return sum(1 for claim in self.queue()[1] if claim.user == user)

    def queue(self) -> tuple[list[Claim], list[Claim]]:
        """``(held, queued)``: the claims holding GPUs, and the waiting ones in admission order."""
        held, queued, _ = self._look()
        return held, queued

    def _look(self) -> tuple[list[Claim], list[Claim], dict[str, float]]:
        with self.store.transaction(immediate=True) as db:
            claims = _sweep(db, self.clock())
            hours = _recent_hours(db, claims, self.clock())
        held = [c for c in claims if c.held]
        return held, fair_share.order([c for c in claims if not c.held], hours), hours

    def describe(self) -> dict:
        """The ledger as JSON: ``held`` (GPUs, since when) and ``queued`` (in order, with each one's place in its
        pool's line and reason), each item's ``claim_id``, ``kind``, ``user``, ``label``, ``count`` and ``pool`` (a
        Ray cluster's claims hold GPUs of no index: Ray places them); ``recent_gpu_hours``: each
        user's use in the fair-share window, which orders the queue."""
        held, queued, hours = self._look()
        now, gpu_quota = self.clock(), self.quota.gpus
        waiting, places = [], {}
        for claim in queued:
            position = places[claim.pool] = places.get(claim.pool, 0) + 1
            holders = [h for h in held if h.pool == claim.pool]
            item = {**_public(claim), "position": position, "submitted_ms": claim.submitted_ms}
            waiting.append({**item, "reason": _why(position, claim, holders, gpu_quota, now)})
        return {
            "held": [{**_public(c), "gpus": _indexes(c), "granted_ms": c.granted_ms} for c in held],
            "queued": waiting,
            "recent_gpu_hours": {user: round(value, 6) for user, value in sorted(hours.items())},
            "shared_gpus": list(shared_gpus()),
        }

    @staticmethod
    def _check(claim: Claim, claims: list[Claim], indexes: Sequence[int], quota: Quota) -> None:
        if claim.count > len(indexes):
            raise NoSuchGpus(f"{claim.count} GPU(s) asked for but {claim.pool or 'this machine'} has {len(indexes)}")
        if refusal := quota.refusal(claim.count):
            raise QuotaExceeded(f"{claim.count} GPU(s) asked for, {refusal}")
        waiting = sum(1 for c in claims if c.user == claim.user and not c.held)  # in every pool
        if refusal := quota.queued_refusal(claim.user, waiting):
            raise QuotaExceeded(refusal)

    def _admit(
        self, db: sqlite3.Connection, claims: list[Claim], indexes: Sequence[int], claim_id: str, gpu_quota: int | None
    ) -> Admission:
        now, mine = self.clock(), next(c for c in claims if c.claim_id == claim_id)
        claims = [c for c in claims if c.pool == mine.pool]  # another pool's GPUs are none of these
        held = [c for c in claims if c.held]
        shared = [i for i in shared_gpus() if i in indexes] if not mine.pool else []
        taken = {g for c in held for g in c.gpus} | set(shared)
        hours = _recent_hours(db, claims, now)
        ordered = fair_share.order([c for c in claims if not c.held], hours)
        free = [i for i in indexes if i not in taken]
        given = fair_share.admitted(ordered, free, _held_by_user(held), gpu_quota, shared)
        for granted, gpus in given.items():
            db.execute(
                "UPDATE gpu_claims SET gpus = ?, granted_ms = ? WHERE claim_id = ?", (json.dumps(gpus), now, granted)
            )
        if mine.held or claim_id in given:
            return Admission(mine.gpus or given[claim_id])
        waiting = [c for c in ordered if c.claim_id not in given]
        position = 1 + next(n for n, c in enumerate(waiting) if c.claim_id == claim_id)
        return Admission(None, position, _why(position, mine, held, gpu_quota, now))


def _held_by_user(held: list[Claim]) -> dict[str, int]:
    by_user: dict[str, int] = {}
    for claim in held:
        by_user[claim.user] = by_user.get(claim.user, 0) + claim.count
    return by_user


def _why(position: int, claim: Claim, held: list[Claim], gpu_quota: int | None, now: int) -> str:
    """Why a queued claim waits: its user's GPU quota when that holds it back, else its place and the holders."""
    by_user = _held_by_user(held)
    if fair_share.over_quota(claim, by_user, gpu_quota):
        return (
            f"{fair_share.ordinal(position)} in line; {claim.user} holds {by_user[claim.user]} GPU(s), and"
            f" {claim.count} more would pass the quota of {gpu_quota} at once ({GPU_QUOTA_ENV})"
        )
    return fair_share.reason(position, claim, held, now)


def _public(claim: Claim) -> dict:
    return {
        "claim_id": claim.claim_id,
        "kind": claim.kind,
        "user": claim.user,
        "label": claim.label,
        "count": claim.count,
        "pool": claim.pool,
    }


def _indexes(claim: Claim) -> list[int]:
    """The GPUs a held claim names: this machine's indexes (a cluster's claim holds a count: Ray places it)."""
    return [] if claim.pool else list(claim.gpus)


def _columns(claim: Claim) -> tuple:
    return claim.claim_id, claim.kind, claim.user, claim.label, claim.count, claim.submitted_ms, claim.pool


def _sweep(db: sqlite3.Connection, now: int) -> list[Claim]:
    """The ledger's claims, once those of processes that are gone are dropped (and use older than the window)."""
    rows = db.execute("SELECT * FROM gpu_claims").fetchall()
    alive: dict[tuple, bool] = {}
    claims = []
    for row in rows:
        key = (row["pid"], row["pid_started"])
        if key not in alive:
            alive[key] = procs.is_alive(*key)
        if not alive[key] and not _work_left(row["kind"], row["claim_id"]):
            _drop(db, row["claim_id"], now)
            continue
        gpus = json.loads(row["gpus"]) if row["gpus"] else None
        names = ("claim_id", "kind", "user", "label", "count", "submitted_ms", "granted_ms", "pool")
        fields = {k: row[k] for k in names}
        claims.append(Claim(**fields, gpus=tuple(gpus) if gpus is not None else None))
    db.execute("DELETE FROM gpu_use WHERE end_ms < ?", (now - fair_share.WINDOW_MS,))
    return claims


def _work_left(kind: str, claim_id: str) -> bool:
    """Whether a claim whose process is gone still has work on its GPUs: a job's supervisor killed with SIGKILL
    leaves its command running until it is reaped, and that command keeps the GPUs until then."""
    if kind != "job":
        return False  # a call's ranks die with the kernel that made it
    return bool(procs.ProcessTree(marker={JOB_MARKER: claim_id}).scan())


def _drop(db: sqlite3.Connection, claim_id: str, now: int) -> None:
    """Remove a claim; the time it held GPUs is kept as its user's use."""
    row = db.execute("SELECT user, count, granted_ms FROM gpu_claims WHERE claim_id = ?", (claim_id,)).fetchone()
    if row is None:
        return
    db.execute("DELETE FROM gpu_claims WHERE claim_id = ?", (claim_id,))
    if row["granted_ms"] is not None:
        db.execute(
            "INSERT INTO gpu_use (user, gpus, start_ms, end_ms) VALUES (?,?,?,?)",
            (row["user"], row["count"], row["granted_ms"], now),
        )


def _recent_hours(db: sqlite3.Connection, claims: list[Claim], now: int) -> dict[str, float]:
    """GPU-hours per user in the fair-share window: the ended holds summed by SQLite, the holds in progress added."""
    since = now - fair_share.WINDOW_MS
    ended = db.execute(
        "SELECT user, SUM(gpus * (MIN(end_ms, ?) - MAX(start_ms, ?))) / 3600000.0 AS hours FROM gpu_use"
        " WHERE end_ms > ? GROUP BY user",
        (now, since, since),
    )
    hours = {row["user"]: row["hours"] for row in ended}
    holding = [Use(c.user, c.count, c.granted_ms, None) for c in claims if c.held]
    for user, more in fair_share.recent_gpu_hours(holding, now).items():
        hours[user] = hours.get(user, 0.0) + more
    return hours
