"""Background work of the server extension, off the event loop's way: failing jobs whose supervisor died, and
starting the embedded MLflow UI once its store exists."""

from __future__ import annotations

import logging
from concurrent.futures import Future, ThreadPoolExecutor

from tornado.ioloop import PeriodicCallback

#: Seconds between two looks for the embedded store (a stat call), to start its UI soon after the first run.
UI_CHECK_SECONDS = 1.0


class JobChecks:
    """Every ``interval_seconds``, on a worker thread: fail the jobs under AIR_HOME whose supervisor is gone.

    The one place a server does it (the panel's reads never do); the `air` command does it where no server runs.
    """

    def __init__(self, interval_seconds: float, log: logging.Logger):
        self.log = log
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="jupyter-air-jobs")
        self._running: Future | None = None
        self._store = None  # the JobStore of AIR_HOME, opened once its database exists
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
        from .workloads.control import reap
        from .workloads.store import JobStore

        home = air_home_path()
        try:
            if self._store is None or self._store.home != home:
                if not (home / "jobs.db").exists():
                    return  # no job ever ran here: nothing to check, and nothing created
                self._store = JobStore(home)
            for job_run_id in reap(self._store):
                self.log.warning("jupyter_air: job %s failed: its supervisor is gone.", job_run_id)
        except Exception:  # a broken job database must not stop the checks
            self.log.exception("jupyter_air: checking the jobs under %s failed.", home)


class UiAutostart:
    """Starts the MLflow UI (``ui_process.MlflowUi``) as soon as its store exists, then stops looking."""

    def __init__(self, ui):
        self.ui = ui
        self._callback = PeriodicCallback(self._check, UI_CHECK_SECONDS * 1000)

    def start(self) -> None:
        self._callback.start()

    def stop(self) -> None:
        self._callback.stop()

    async def _check(self) -> None:
        if self.ui.running:
            self._callback.stop()
            return
        await self.ui.start_if_store_exists()
