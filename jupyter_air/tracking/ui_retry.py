"""When the background start of the MLflow UI tries again after a start failed (a damaged ``mlflow.db``, say): after
a delay that doubles from a base up to :data:`MAX_RETRY_SECONDS`, or at once when the store file changes (replaced,
restored, written). Each state of the file is worth one line in the log, not one per attempt."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path

#: Seconds before a failed background start is tried again, by default (doubling at each failure).
RETRY_SECONDS = 5.0
#: The longest wait between two background starts of a UI whose store file stays as it was when a start failed.
MAX_RETRY_SECONDS = 300.0


def file_state(path: Path | None) -> tuple | None:
    """What changes when a file is replaced or written: its device, inode, size and modification time."""
    if path is None:
        return None
    try:
        stat = os.stat(path)
    except OSError:
        return None
    return stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns


class StartRetry:
    """The backoff of failed starts, on ``clock`` (seconds; ``time.monotonic`` unless a test moves its own)."""

    def __init__(
        self, base_seconds: float, max_seconds: float = MAX_RETRY_SECONDS, clock: Callable[[], float] | None = None
    ):
        self.base_seconds = base_seconds
        self.max_seconds = max(max_seconds, base_seconds)
        self.clock = clock or time.monotonic
        self.failures = 0  # failed starts in a row with the store file as it is
        self.delay = 0.0  # seconds from the last failed start to the next try
        self._file: tuple | None = None
        self._due = 0.0

    def due(self, path: Path | None) -> bool:
        """True when a start may be tried: none failed, the file changed since the last failure, or the wait is
        over."""
        return not self.failures or file_state(path) != self._file or self.clock() >= self._due

    def failed(self, path: Path | None) -> bool:
        """Note a failed start; True for the first failure with the file in this state (the one to log)."""
        file = file_state(path)
        first = not self.failures or file != self._file
        self.failures = 1 if first else self.failures + 1
        self.delay = self.base_seconds if first else min(self.delay * 2, self.max_seconds)
        self._file, self._due = file, self.clock() + self.delay
        return first

    def succeeded(self) -> None:
        self.failures, self.delay, self._file = 0, 0.0, None
