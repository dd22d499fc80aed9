"""The Jupyter server's use of AIR_HOME's resident MLflow server (:mod:`~jupyter_air.tracking.resident`) for the UI at
``{base_url}mlflow/``: started in the background once the store exists (so the first run page opens at once), or on
the first authenticated request; waited for until it answers. A background start that failed is tried again with a
backoff (:mod:`~jupyter_air.tracking.ui_retry`). The Jupyter server does not own it: the server stops by itself once
idle, whether the Jupyter server still runs or not."""

from __future__ import annotations

import asyncio
import logging
import time
from pathlib import Path

from jupyter_air.home import AirHomeError
from jupyter_air.tracking import resident
from jupyter_air.tracking.store import sqlite_path, store_problem, tracking_uri
from jupyter_air.tracking.ui_retry import RETRY_SECONDS, StartRetry

#: Seconds the proxy waits for a freshly started MLflow server (it needs about 20 s on a small machine).
STARTUP_TIMEOUT_SECONDS = 120
_POLL_SECONDS = 0.25


class MlflowUiUnavailable(RuntimeError):
    """The MLflow UI could not be started; the message says why and where its log is."""


class MlflowUi:
    """Finds (or starts) the resident MLflow server of this Jupyter server's store and waits until it answers."""

    def __init__(self, log: logging.Logger, uri: str | None = None, retry: StartRetry | None = None):
        self._uri = uri
        self.log = log
        self.retry = retry or StartRetry(RETRY_SECONDS)
        self.server: resident.Server | None = None
        self.started_at: float | None = None
        self.ready_at: float | None = None
        self._lock = asyncio.Lock()

    @property
    def uri(self) -> str:
        """The store's tracking URI; raises AirHomeError while AIR_HOME cannot be used (a file, say)."""
        return self._uri or tracking_uri()

    @property
    def running(self) -> bool:
        """True when the server this UI last reached answers still runs."""
        return self.ready_at is not None and self.server is not None and self.server.alive()

    def store_path(self) -> Path | None:
        """This server's store when it is a SQLite file that exists (a run has been recorded in it), else None."""
        try:
            path = sqlite_path(self.uri)
        except AirHomeError:
            return None
        return path if path is not None and path.is_file() else None

    def store_exists(self) -> bool:
        """True when this server's store is a SQLite file that exists."""
        return self.store_path() is not None

    async def ensure_running(self) -> Path:
        """The socket of the resident server once it answers, started unless it runs; concurrent callers share
        one wait, which ends early if the server exits."""
        if self.running:
            return Path(self.server.socket)
        try:
            self.uri  # noqa: B018 - an unusable AIR_HOME is said here, before anything is started
        except AirHomeError as err:
            raise MlflowUiUnavailable(str(err)) from None
        async with self._lock:
            server = await asyncio.to_thread(resident.ensure, self.uri)
            if server != self.server:
                self.server, self.started_at, self.ready_at = server, time.monotonic(), None
            deadline = time.monotonic() + STARTUP_TIMEOUT_SECONDS
            while not await asyncio.to_thread(server.answers):
                if not server.alive():
                    store = await asyncio.to_thread(store_problem, self.uri)
                    raise MlflowUiUnavailable(
                        "the MLflow UI exited while starting: " + (store or "its log is $AIR_HOME/logs/mlflow-ui.log")
                    )
                if time.monotonic() > deadline:
                    raise MlflowUiUnavailable(
                        f"the MLflow UI did not answer within {STARTUP_TIMEOUT_SECONDS:.0f} s; its log is "
                        "$AIR_HOME/logs/mlflow-ui.log"
                    )
                await asyncio.sleep(_POLL_SECONDS)
            if self.ready_at is None:
                self.ready_at = time.monotonic()
                self.log.info("jupyter_air: MLflow UI ready after %.1f s.", self.ready_at - self.started_at)
            return Path(server.socket)

    async def start_if_store_exists(self) -> None:
        """Start the UI in the background once the store exists (quietly: errors are logged). After a failed start,
        the next waits for ``retry`` (or for the store file to change); a failure is logged once per state of the
        file."""
        path = None if self.running or self._lock.locked() else self.store_path()
        if path is None or not self.retry.due(path):
            return
        try:
            await self.ensure_running()
        except MlflowUiUnavailable as err:
            if self.retry.failed(path):
                self.log.warning(
                    "jupyter_air: %s (tried again in %.0f s, less and less often up to every %.0f minutes, and at "
                    "once when %s changes)",
                    err,
                    self.retry.delay,
                    self.retry.max_seconds / 60,
                    path,
                )
            else:
                self.log.debug("jupyter_air: %s (again; next try in %.0f s)", err, self.retry.delay)
        else:
            self.retry.succeeded()
