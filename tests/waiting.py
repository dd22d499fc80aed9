"""Waiting for a condition in tests: a bounded wait, never a speed assertion."""

from __future__ import annotations

import asyncio
import time


async def eventually(predicate, timeout: float = 10.0, step: float = 0.02):
    """Wait until ``predicate()`` is true (fails after ``timeout`` seconds); a wait, not a speed assertion."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached in time")
        await asyncio.sleep(step)
