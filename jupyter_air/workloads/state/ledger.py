"""The GPU ledger of this machine, in the job store: who holds which GPU, who waits for how many, and in what order.

Every piece of work that uses GPUs (a job's attempts, a notebook call) claims them here and is given them only when
they are free and its turn has come (:mod:`~jupyter_air.workloads.state.fair_share`); no GPU is given to two claims.
A claim names the process that waits for or holds it: a claim whose process is gone (killed, its machine restarted)
is dropped by the next look at the ledger, once no process of its work is left, so nothing holds a GPU for work
that is gone and no GPU is given while work that was killed halfway still runs on it.
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
from jupyter_air.workloads.state.records import JOB_MARKER, now_ms
from jupyter_air.workloads.state.store import JobStore

#: The most GPUs one user's work holds at once on this machine (unset: no limit); a larger claim is refused.
GPU_QUOTA_ENV = "AIR_GPU_QUOTA"
#: The most claims one user has waiting for GPUs in the queue (unset: no limit); the next one is refused.
QUEUE_QUOTA_ENV = "AIR_QUEUE_QUOTA"
#: GPUs (indexes, comma-separated) that any number of claims may hold at once, given once no other GPU is free.
SHARED_GPUS_ENV = "AIR_SHARED_GPUS"


class QuotaExceeded(RuntimeError):
    """A claim refused by a quota (the message names it)."""


class NoSuchGpus(ValueError):
    """A claim for more GPUs than the machine has: it could never be given."""


@dataclass(frozen=True)
class Quota:
    """Per user: GPUs held at once and claims queued (None: no limit)."""

    gpus: int | None = None
    queued: int | None = None

    @classmethod
    def from_environment(cls) -> Quota:
        return cls(_limit(GPU_QUOTA_ENV), _limit(QUEUE_QUOTA_ENV))

    def refusal(self, count: int) -> str | None:
        """Why ``count`` GPUs at once are over the GPU quota (and what to ask for instead), or None."""
        if self.gpus is None or count <= self.gpus:
            return None
        return f"over the quota of {self.gpus} GPU(s) at once per user ({GPU_QUOTA_ENV}); ask for at most {self.gpus}"

    def queued_refusal(self, user: str, waiting: int) -> str | None:
        """Why one more claim of ``user``, who has ``waiting`` claims in line, is over the queue quota, or None."""
        if self.queued is None or waiting < self.queued:
            return None
        return (
            f"{user} has {waiting} claim(s) waiting for GPUs, the quota of queued work per user"
            f" ({QUEUE_QUOTA_ENV}={self.queued}); cancel one or wait for one to start"
        )


def shared_gpus() -> tuple[int, ...]:
    """``$AIR_SHARED_GPUS``: the GPUs the admin lets several claims hold at once; ValueError saying what to set."""
    text = os.environ.get(SHARED_GPUS_ENV, "").strip()
    parts = [part.strip() for part in text.split(",") if part.strip()]
    if not all(part.isdigit() for part in parts):
        raise ValueError(f"{SHARED_GPUS_ENV}={text!r}: expected GPU indexes separated by commas, e.g. 2,3; or unset it")
    return tuple(sorted({int(part) for part in parts}))


def _limit(name: str) -> int | None:
    text = os.environ.get(name, "").strip()
    if not text:
        return None
    if not text.isdigit():
        raise ValueError(f"{name}={text!r} is not a whole number: set it to the limit per user, or unset it")
    return int(text)


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
        ``indexes``, held by process ``pid`` (default: this one); gives it its GPUs when they are free and its turn
        has come."""
        pid, quota = os.getpid() if pid is None else pid, self.quota
        with self.store.transaction(immediate=True) as db:
            claims = _sweep(db, self.clock())
            if claim.claim_id not in {c.claim_id for c in claims}:
                self._check(claim, claims, indexes, quota)
                claim = dataclasses.replace(claim, submitted_ms=self.clock())
                db.execute(
                    "INSERT INTO gpu_claims (claim_id, kind, user, label, count, submitted_ms, pid, pid_started)"
                    " VALUES (?,?,?,?,?,?,?,?)",
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
        """The ledger as JSON: ``held`` (GPUs, since when) and ``queued`` (in order, with each one's place and
        reason), each item's ``claim_id``, ``kind``, ``user``, ``label`` and ``count``; ``recent_gpu_hours``: each
        user's use in the fair-share window, which orders the queue."""
        held, queued, hours = self._look()
        now, gpu_quota = self.clock(), self.quota.gpus
        waiting = []
        for position, claim in enumerate(queued, start=1):
            item = {**_public(claim), "position": position, "submitted_ms": claim.submitted_ms}
            waiting.append({**item, "reason": _why(position, claim, held, gpu_quota, now)})
        return {
            "held": [{**_public(c), "gpus": list(c.gpus), "granted_ms": c.granted_ms} for c in held],
            "queued": waiting,
            "recent_gpu_hours": {user: round(value, 6) for user, value in sorted(hours.items())},
            "shared_gpus": list(shared_gpus()),
        }

    @staticmethod
    def _check(claim: Claim, claims: list[Claim], indexes: Sequence[int], quota: Quota) -> None:
        if claim.count > len(indexes):
            raise NoSuchGpus(f"{claim.count} GPU(s) asked for but this machine has {len(indexes)}")
        if refusal := quota.refusal(claim.count):
            raise QuotaExceeded(f"{claim.count} GPU(s) asked for, {refusal}")
        waiting = sum(1 for c in claims if c.user == claim.user and not c.held)
        if refusal := quota.queued_refusal(claim.user, waiting):
            raise QuotaExceeded(refusal)

    def _admit(
        self, db: sqlite3.Connection, claims: list[Claim], indexes: Sequence[int], claim_id: str, gpu_quota: int | None
    ) -> Admission:
        now = self.clock()
        held = [c for c in claims if c.held]
        shared = [i for i in shared_gpus() if i in indexes]
        taken = {g for c in held for g in c.gpus} | set(shared)
        hours = _recent_hours(db, claims, now)
        ordered = fair_share.order([c for c in claims if not c.held], hours)
        free = [i for i in indexes if i not in taken]
        given = fair_share.admitted(ordered, free, _held_by_user(held), gpu_quota, shared)
        for granted, gpus in given.items():
            db.execute(
                "UPDATE gpu_claims SET gpus = ?, granted_ms = ? WHERE claim_id = ?", (json.dumps(gpus), now, granted)
            )
        mine = next(c for c in claims if c.claim_id == claim_id)
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
    }


def _columns(claim: Claim) -> tuple:
    return claim.claim_id, claim.kind, claim.user, claim.label, claim.count, claim.submitted_ms


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
        fields = {k: row[k] for k in ("claim_id", "kind", "user", "label", "count", "submitted_ms", "granted_ms")}
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
