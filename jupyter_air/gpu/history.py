"""A bounded ring buffer of samples that answers ``since`` queries; the sampler guards it with its lock."""

from __future__ import annotations

import bisect
from collections import deque
from dataclasses import dataclass

from .host import HostReading
from .types import Reading


@dataclass(frozen=True)
class Sample:
    """Every GPU and the host at one moment (epoch milliseconds)."""

    timestamp_ms: int
    reading: Reading
    host: HostReading


class History:
    """The last ``capacity`` samples, timestamps strictly increasing. Not thread-safe on its own."""

    def __init__(self, capacity: int):
        if capacity < 1:
            raise ValueError("History capacity must be at least 1 sample.")
        self.capacity = capacity
        self._samples: deque[Sample] = deque(maxlen=capacity)
        self._timestamps_ms: deque[int] = deque(maxlen=capacity)

    def __len__(self) -> int:
        return len(self._samples)

    def append(self, timestamp_ms: int, reading: Reading, host: HostReading) -> Sample:
        """Store one sample (a timestamp not after the newest becomes newest + 1 ms); returns it."""
        if self._timestamps_ms and timestamp_ms <= self._timestamps_ms[-1]:
            timestamp_ms = self._timestamps_ms[-1] + 1
        sample = Sample(timestamp_ms, reading, host)
        self._samples.append(sample)
        self._timestamps_ms.append(timestamp_ms)
        return sample

    def latest(self) -> Sample | None:
        return self._samples[-1] if self._samples else None

    def since(self, since_ms: int | None) -> tuple[Sample, ...]:
        """Samples newer than ``since_ms`` (all when ``None``), oldest first."""
        start = 0 if since_ms is None else bisect.bisect_right(self._timestamps_ms, since_ms)
        return tuple(self._samples[k] for k in range(start, len(self._samples)))
