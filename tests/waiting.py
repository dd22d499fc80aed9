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


def wait_for(check, what: str, seconds: float = 90, step: float = 0.2):
    """``check()``'s first true answer, asked every ``step`` seconds; fails naming ``what`` after ``seconds``."""
    deadline = time.monotonic() + seconds
    while not (found := check()):
        assert time.monotonic() < deadline, f"waited {seconds} s for {what}"
        time.sleep(step)
    return found
