"""The one sampler per server process: a named daemon thread that reads the GPU source into the history.

Sampling stops after ``idle_timeout_seconds`` without a request (``touch``) and resumes on the next one.
Every source call (NVML included) runs on the sampler thread or an executor thread, never on the event loop.
Readers get an immutable :class:`Snapshot` taken under the one lock that also guards every append.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from .history import History, Sample
from .host import read_host
from .types import DeviceInfo, GpuSource, Reading

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Snapshot:
    """What one answer needs, consistent with itself: the source's state and the samples since a time."""

    source: str | None
    available: bool
    reason: str | None
    sampling: bool
    devices: tuple[DeviceInfo, ...]
    samples: tuple[Sample, ...]
    #: The newest sample, even when none is newer than ``since`` (processes, host memory, device errors).
    latest: Sample | None


@dataclass(frozen=True)
class _SourceState:
    name: str | None = None
    available: bool = False
    reason: str | None = None
    devices: tuple[DeviceInfo, ...] = ()


class Sampler:
    """Samples ``open_source()`` every ``interval_seconds`` while someone is looking."""

    def __init__(
        self,
        open_source: Callable[[], GpuSource],
        interval_seconds: float,
        history_seconds: float,
        idle_timeout_seconds: float,
    ):
        self.interval_seconds = interval_seconds
        self.history_seconds = history_seconds
        self.idle_timeout_seconds = idle_timeout_seconds
        self._history = History(max(1, round(history_seconds / interval_seconds)))
        self._state = _SourceState()
        self._lock = threading.Lock()  # guards the history and the source state read by snapshots
        self._source: GpuSource | None = None
        self._open_source = open_source
        self._read_lock = threading.Lock()  # one source call at a time
        self._failures = 0
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

    def __len__(self) -> int:
        with self._lock:
            return len(self._history)

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
            if self._source is not None:
                self._source.close()

    def touch(self) -> None:
        """Note a request to the GPU routes: it keeps sampling alive."""
        self._last_request = time.monotonic()

    def snapshot(self, since_ms: int | None = None) -> Snapshot:
        """The source's state and the samples newer than ``since_ms``, all taken at one instant."""
        with self._lock:
            state = self._state
            return Snapshot(
                state.name,
                state.available,
                state.reason,
                self._sampling,
                state.devices,
                self._history.since(since_ms),
                self._history.latest(),
            )

    def readings_since(self, since_ms: int | None) -> list[tuple[int, Reading]]:
        """``(epoch ms, reading)`` of the samples after ``since_ms`` while sampling runs (no source call); once it
        has stopped, one reading taken now, kept out of the history, sampling left stopped (the idle-holder check).
        Blocking when it reads: call it off the event loop."""
        fresh_ms = 3000 * max(self.interval_seconds, 1.0)  # a sample this recent means sampling goes on
        with self._lock:
            latest = self._history.latest()
            if self._sampling and latest is not None and time.time() * 1000 - latest.timestamp_ms < fresh_ms:
                samples = self._history.since(since_ms) or (latest,)
                return [(s.timestamp_ms, s.reading) for s in samples]
        with self._read_lock:
            if self._closing.is_set():
                return []
            if self._source is None:
                self._source = self._open_source()
            return [(int(time.time() * 1000), self._source.read())]

    def sample_now(self) -> None:
        """Take one sample (opening the source on first use) and mark sampling as running.

        A source that fails keeps sampling going: the sample holds no GPU values, and the state says
        why until a read succeeds again (the first traceback is logged, then a count now and then).
        """
        with self._read_lock:
            if self._closing.is_set():
                return
            try:
                if self._source is None:
                    self._source = self._open_source()
                source = self._source
                reading, state = source.read(), _state_of(source)
                if self._failures:
                    log.info("GPU source %r works again after %d failed reads.", source.name, self._failures)
                self._failures = 0
            except Exception as exc:  # noqa: BLE001 - any source failure becomes a reason in the answer
                reading, state = self._failed(exc)
            host = read_host()
            with self._lock:
                self._history.append(int(time.time() * 1000), reading, host)
                self._state = state
                self._last_sample = time.monotonic()
                self._sampling = True
        self._wake.set()

    def _failed(self, exc: Exception) -> tuple[Reading, _SourceState]:
        self._failures += 1
        name = self._source.name if self._source is not None else None
        if self._failures == 1:
            log.exception("GPU source %r failed; the GPU routes report it as unavailable until it recovers.", name)
        elif self._failures in (10, 100) or self._failures % 1000 == 0:
            log.warning("GPU source %r has failed %d reads in a row: %s", name, self._failures, exc)
        devices = self._state.devices
        reason = (
            f"The GPU source {name or 'setup'} failed on its last {self._failures} read(s): "
            f"{type(exc).__name__}: {exc}. Sampling goes on every {self.interval_seconds:g} s; "
            "Refresh retries at once."
        )
        return Reading.empty(len(devices)), _SourceState(name, False, reason, devices)

    async def ensure_fresh(self) -> None:
        """When sampling has stopped (or never ran), take a sample now, off the event loop, and resume."""
        if self._sampling and len(self):
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
            self.sample_now()

    def _wait(self, timeout: float | None) -> None:
        self._wake.wait(timeout)
        self._wake.clear()


def _state_of(source: GpuSource) -> _SourceState:
    return _SourceState(source.name, bool(source.available), source.reason, tuple(source.devices))
