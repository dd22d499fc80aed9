"""The one sampler per server process: a named daemon thread that reads the GPU source into the history.

Sampling stops after ``idle_timeout_seconds`` without a request (``touch``) and resumes on the next one.
Every source call (NVML included) runs on the sampler thread or an executor thread, never on the event loop.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from .history import History
from .host import read_host

log = logging.getLogger(__name__)


class Sampler:
    """Samples ``open_source()`` every ``interval_seconds`` while someone is looking."""

    def __init__(self, open_source: Callable, interval_seconds: float, history_seconds: float,
                 idle_timeout_seconds: float):
        self.interval_seconds = interval_seconds
        self.history_seconds = history_seconds
        self.idle_timeout_seconds = idle_timeout_seconds
        self.history = History(max(1, round(history_seconds / interval_seconds)))
        self.source = None
        self._open_source = open_source
        self._read_lock = threading.Lock()
        self._wake = threading.Event()
        self._closing = threading.Event()
        self._sampling = True
        self._last_request = time.monotonic()
        self._last_sample = float("-inf")
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="jupyter-air-refresh")
        self._resuming: asyncio.Future | None = None
        self._thread = threading.Thread(target=self._run, name="jupyter-air-sampler", daemon=True)

    @property
    def sampling(self) -> bool:
        return self._sampling

    def start(self) -> None:
        self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        """Stop the thread (waiting at most ``timeout`` seconds) and close the source."""
        self._closing.set()
        self._wake.set()
        if self._thread.is_alive():
            self._thread.join(timeout)
        self._executor.shutdown(wait=False, cancel_futures=True)
        with self._read_lock:
            if self.source is not None:
                self.source.close()

    def touch(self) -> None:
        """Note a request to the GPU routes: it keeps sampling alive."""
        self._last_request = time.monotonic()

    def sample_now(self) -> None:
        """Take one sample (opening the source on first use) and mark sampling as running."""
        with self._read_lock:
            if self._closing.is_set():
                return
            if self.source is None:
                self.source = self._open_source()
            reading = self.source.read()
            host = read_host()
            self.history.append(int(time.time() * 1000), reading, host)
            self._last_sample = time.monotonic()
            self._sampling = True
        self._wake.set()

    async def ensure_fresh(self) -> None:
        """When sampling has stopped (or never ran), take a sample now, off the event loop, and resume."""
        if self._sampling and len(self.history):
            return
        await self.refresh()

    async def refresh(self) -> None:
        """Take a sample now, off the event loop; concurrent callers share one sample."""
        if self._resuming is None or self._resuming.done():
            loop = asyncio.get_running_loop()
            self._resuming = asyncio.ensure_future(loop.run_in_executor(self._executor, self.sample_now))
        await asyncio.shield(self._resuming)

    def _run(self) -> None:
        while not self._closing.is_set():
            if not self._sampling:
                self._wait(None)
                continue
            delay = self._last_sample + self.interval_seconds - time.monotonic()
            if delay > 0:
                self._wait(delay)
                continue
            if time.monotonic() - self._last_request >= self.idle_timeout_seconds:
                self._sampling = False
                log.info("GPU sampling paused: no request for %s s.", self.idle_timeout_seconds)
                continue
            try:
                self.sample_now()
            except Exception:  # noqa: BLE001 - a failing source must never stop the sampler; logged with traceback
                log.exception("GPU sample failed; retrying in %s s.", self.interval_seconds)
                self._last_sample = time.monotonic()

    def _wait(self, timeout: float | None) -> None:
        self._wake.wait(timeout)
        self._wake.clear()
