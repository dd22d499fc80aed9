"""Background work of the server extension, off the event loop's way: failing jobs whose supervisor died, and
starting the embedded MLflow UI once its store exists (and keeping it up)."""

from __future__ import annotations

import asyncio
import logging
import time
from concurrent.futures import Future, ThreadPoolExecutor

from tornado.ioloop import PeriodicCallback

#: Seconds between two looks for the embedded store (a stat call), to start its UI soon after the first run, and
#: between two looks at whether the UI still runs.
UI_CHECK_SECONDS = 1.0
#: Seconds between two health requests to the UI: far less than the shortest sensible idle stop.
UI_KEEP_ALIVE_SECONDS = 60.0


class JobChecks:
    """Every ``interval_seconds``, on a worker thread: reap the jobs under AIR_HOME whose supervisor is gone."""

    def __init__(self, interval_seconds: float, log: logging.Logger):
        self.log = log
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="jupyter-air-jobs")
        self._running: Future | None = None
        self._callback = PeriodicCallback(self._check, interval_seconds * 1000)

    def start(self) -> None:
        self._callback.start()

    def stop(self) -> None:
        self._callback.stop()
        self._executor.shutdown(wait=True, cancel_futures=True)

    def _check(self) -> None:
        if self._running is not None and not self._running.done():
            return  # the previous check (stopping a workload, uploading its logs) is still at work
        self._running = self._executor.submit(self._reap)

    def _reap(self) -> None:
        from .home import air_home_path
        from .workloads.control import reap_if_any

        home = air_home_path()
        try:
            for job_run_id in reap_if_any(home):
                self.log.warning("jupyter_air: job %s failed: its supervisor is gone.", job_run_id)
        except Exception:  # a broken job database must not stop the checks
            self.log.exception("jupyter_air: checking the jobs under %s failed.", home)


class UiAutostart:
    """Starts the MLflow UI (``ui_process.MlflowUi``, AIR_HOME's resident MLflow server) as soon as its store
    exists, and keeps it up while this server runs: started again when gone, and asked for its health every
    ``UI_KEEP_ALIVE_SECONDS`` so that it never stops as idle (kernels then find it at their first call)."""

    def __init__(self, ui):
        self.ui = ui
        self._callback = PeriodicCallback(self._check, UI_CHECK_SECONDS * 1000)
        self._asked = 0.0

    def start(self) -> None:
        self._callback.start()

    def stop(self) -> None:
        self._callback.stop()

    async def _check(self) -> None:
        from .tracking.resident import idle_seconds

        if not self.ui.running:
            await self.ui.start_if_store_exists()
        elif time.monotonic() - self._asked >= min(UI_KEEP_ALIVE_SECONDS, idle_seconds() / 3):
            self._asked = time.monotonic()
            await asyncio.to_thread(self.ui.server.answers)
