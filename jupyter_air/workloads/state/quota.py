"""The admin's settings of the GPU ledger, read from the environment of whoever claims: quotas per user (GPUs held at
once, claims waiting) and the GPUs several claims may share."""

from __future__ import annotations

import os
from dataclasses import dataclass

#: The most GPUs one user's work holds at once on this machine, or on one Ray cluster (unset: no limit); a larger
#: claim is refused.
GPU_QUOTA_ENV = "AIR_GPU_QUOTA"
#: The most claims one user has waiting for GPUs in the queue (unset: no limit); the next one is refused.
QUEUE_QUOTA_ENV = "AIR_QUEUE_QUOTA"
#: GPUs (indexes, comma-separated) that any number of claims may hold at once, given once no other GPU is free.
SHARED_GPUS_ENV = "AIR_SHARED_GPUS"


class QuotaExceeded(RuntimeError):
    """A claim refused by a quota (the message names it)."""


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
