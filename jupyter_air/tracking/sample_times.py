"""When a run's system metrics are sampled: densely at its start, so a short run's charts have a shape, then every
configured interval."""

from __future__ import annotations

import itertools
from collections.abc import Iterator

#: Seconds between the first samples of a run (about 10 samples in its first 21 s), each capped at the interval.
RAMP_SECONDS = (1.0,) * 5 + (2.0,) * 3 + (5.0,) * 2


def sample_delays(interval_seconds: float) -> Iterator[float]:
    """The waits between a run's samples: :data:`RAMP_SECONDS` (none longer than ``interval_seconds``), then
    ``interval_seconds`` for good. A long run takes 8 samples more than at the interval alone."""
    ramp = (min(delay, interval_seconds) for delay in RAMP_SECONDS)
    return itertools.chain(ramp, itertools.repeat(interval_seconds))
