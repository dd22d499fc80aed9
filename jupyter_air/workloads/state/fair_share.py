"""The order of the GPU queue: fair share between users, first come first served within a user, and the reason a
waiting claim gives (plain records, no database)."""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

#: The window of recent use that orders users: GPU-hours held over the last 24 hours, holds in progress included.
WINDOW_MS = 24 * 3600 * 1000


@dataclass(frozen=True)
class Claim:
    """One piece of work's claim on ``count`` GPUs of the ledger: held (``gpus`` set) or queued."""

    claim_id: str
    kind: str  # "job" or "call"
    user: str
    label: str  # what the user knows it by: a job id, a notebook call's function
    count: int
    submitted_ms: int = 0  # set by the ledger when the claim comes
    gpus: tuple[int, ...] | None = None
    granted_ms: int | None = None
    pool: str = ""  # whose GPUs: "" for this machine's, else a Ray cluster's (Ray places them on its nodes)

    @property
    def held(self) -> bool:
        return self.gpus is not None


@dataclass(frozen=True)
class Use:
    """``gpus`` GPUs held by ``user`` from ``start_ms`` to ``end_ms`` (None: still held)."""

    user: str
    gpus: int
    start_ms: int
    end_ms: int | None


def recent_gpu_hours(uses: Iterable[Use], now_ms: int) -> dict[str, float]:
    """GPU-hours per user within the window that ends ``now_ms`` (the part of each hold inside it)."""
    since, hours = now_ms - WINDOW_MS, {}
    for use in uses:
        inside = min(use.end_ms or now_ms, now_ms) - max(use.start_ms, since)
        hours[use.user] = hours.get(use.user, 0.0) + use.gpus * max(inside, 0) / 3_600_000
    return hours


def order(queued: Sequence[Claim], gpu_hours: Mapping[str, float]) -> list[Claim]:
    """The queue in admission order: the user with the fewest recent GPU-hours first, each user's claims in the
    order they came (a user's later claims wait behind the earlier ones, whatever their size)."""
    first_ms: dict[str, int] = {}
    for claim in queued:
        first_ms[claim.user] = min(first_ms.get(claim.user, claim.submitted_ms), claim.submitted_ms)
    return sorted(queued, key=lambda c: (gpu_hours.get(c.user, 0.0), first_ms[c.user], c.submitted_ms, c.claim_id))


def admitted(
    ordered: Sequence[Claim],
    free: Sequence[int],
    held: Mapping[str, int],
    gpu_quota: int | None = None,
    shared: Sequence[int] = (),
) -> dict[str, tuple[int, ...]]:
    """The GPUs given now, in queue order while they last: ``free`` ones first, each to one claim, then ``shared``
    ones, which any number of claims hold at once. The head of the line is never passed by smaller claims behind it
    (none starves): admission stops at the first claim that does not fit. A claim that would take its user past
    ``gpu_quota`` GPUs at once (``held``: GPUs each user holds) waits for that user's own work instead, and the line
    moves on past it."""
    free, held, given = list(free), dict(held), {}
    for claim in ordered:
        if over_quota(claim, held, gpu_quota):
            continue
        if claim.count > len(free) + len(shared):
            break
        exclusive, free = free[: claim.count], free[claim.count :]
        given[claim.claim_id] = tuple(exclusive) + tuple(shared[: claim.count - len(exclusive)])
        held[claim.user] = held.get(claim.user, 0) + claim.count
    return given


def over_quota(claim: Claim, held: Mapping[str, int], gpu_quota: int | None) -> bool:
    return gpu_quota is not None and held.get(claim.user, 0) + claim.count > gpu_quota


def ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def reason(position: int, claim: Claim, holders: Sequence[Claim], now_ms: int | None = None) -> str:
    """Why a queued claim waits: ``2nd in line for 2 GPUs; held by bob's job-… since 10:02 (1 GPU)``."""
    plural = "GPU" if claim.count == 1 else "GPUs"
    line = f"{ordinal(position)} in line for {claim.count} {plural}"
    if not holders:
        return f"{line}; behind work that came first"
    held = "; ".join(_holder(h, now_ms) for h in sorted(holders, key=lambda h: h.granted_ms or 0)[:3])
    more = f" and {len(holders) - 3} more" if len(holders) > 3 else ""
    return f"{line}; held by {held}{more}"


def _holder(claim: Claim, now_ms: int | None) -> str:
    since = time.strftime("%H:%M", time.localtime((claim.granted_ms or now_ms or 0) / 1000))
    if claim.pool:  # a cluster's GPUs have no index until Ray places them
        return f"{claim.user}'s {claim.kind} {claim.label} since {since} ({claim.count} of {claim.pool})"
    gpus = ",".join(map(str, claim.gpus or ()))
    return f"{claim.user}'s {claim.kind} {claim.label} since {since} (GPU {gpus})"
