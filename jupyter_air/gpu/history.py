"""A bounded ring buffer of samples that answers ``since`` queries in the REST API's columnar shape."""

from __future__ import annotations

import bisect
import threading
from collections import deque

from .host import HostReading
from .types import GPU_METRICS, Reading

# memory_total_bytes is a device property, sent once in ``devices``; the rest are time series.
SERIES_METRICS = tuple(m for m in GPU_METRICS if m != "memory_total_bytes")


class History:
    """The last ``capacity`` samples; appends and reads may come from different threads."""

    def __init__(self, capacity: int):
        if capacity < 1:
            raise ValueError("History capacity must be at least 1 sample.")
        self.capacity = capacity
        self._timestamps_ms: deque[int] = deque(maxlen=capacity)
        self._gpus: deque[Reading] = deque(maxlen=capacity)
        self._host: deque[HostReading] = deque(maxlen=capacity)
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._timestamps_ms)

    def append(self, timestamp_ms: int, reading: Reading, host: HostReading) -> int:
        """Store one sample; timestamps are kept strictly increasing. Returns the timestamp stored."""
        with self._lock:
            if self._timestamps_ms and timestamp_ms <= self._timestamps_ms[-1]:
                timestamp_ms = self._timestamps_ms[-1] + 1
            self._timestamps_ms.append(timestamp_ms)
            self._gpus.append(reading)
            self._host.append(host)
        return timestamp_ms

    def latest(self) -> tuple[Reading | None, HostReading | None]:
        with self._lock:
            if not self._gpus:
                return None, None
            return self._gpus[-1], self._host[-1]

    def since(self, since_ms: int | None, gpu_count: int) -> dict:
        """Samples newer than ``since_ms`` (all when ``None``): timestamps, per-GPU series and host series."""
        with self._lock:
            start = 0 if since_ms is None else bisect.bisect_right(self._timestamps_ms, since_ms)
            count = len(self._timestamps_ms)
            timestamps = [self._timestamps_ms[k] for k in range(start, count)]
            readings = [self._gpus[k] for k in range(start, count)]
            hosts = [self._host[k] for k in range(start, count)]
        gpus = {
            metric: [[getattr(r, metric)[i] if i < len(getattr(r, metric)) else None for r in readings]
                     for i in range(gpu_count)]
            for metric in SERIES_METRICS
        }
        return {
            "timestamps_ms": timestamps,
            "gpus": gpus,
            "host": {
                "cpu_percent": [h.cpu_percent for h in hosts],
                "memory_used_bytes": [h.memory_used_bytes for h in hosts],
            },
        }
