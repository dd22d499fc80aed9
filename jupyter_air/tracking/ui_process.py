"""The embedded MLflow UI process of one Jupyter server: started in the background once the store exists (so
the first run page opens at once), or on the first request to ``{base_url}mlflow/``; stopped with the server."""

from __future__ import annotations

import asyncio
import logging
import sys
import time
from pathlib import Path

from jupyter_air.tracking.proxy import STARTUP_TIMEOUT_SECONDS
from jupyter_air.tracking.store import sqlite_path, tracking_uri


def ui_command(socket: Path) -> list[str]:
    """The UI process: MLflow's server on ``socket`` only (see ``ui_server``)."""
    return [sys.executable, "-m", "jupyter_air.tracking.ui_server", str(socket)]


class MlflowUiUnavailable(RuntimeError):
    """The MLflow UI could not be started; the message says why and where its log is."""


class MlflowUi:
    """Supervises ``python -m jupyter_air.tracking.ui_server <socket>`` (simpervisor, as jupyter-server-proxy)."""

    def __init__(self, socket: Path, environment: dict[str, str], log: logging.Logger):
        self.socket = socket
        self.environment = environment
        self.log = log
        self.started_at: float | None = None
        self.ready_at: float | None = None
        self._process = None
        self._lock = asyncio.Lock()

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.running

    def store_exists(self) -> bool:
        """True when this server's store is a SQLite file that exists (a run has been recorded in it)."""
        path = sqlite_path(tracking_uri())
        return path is not None and path.is_file()

    async def ensure_running(self) -> None:
        """Start the UI unless it runs, and wait until it answers; concurrent callers share one start."""
        async with self._lock:
            if self.running:
                return
            from simpervisor import SupervisedProcess

            command = ui_command(self.socket)
            self.started_at, self.ready_at = time.monotonic(), None
            self._process = SupervisedProcess(
                "mlflow-ui",
                *command,
                env=self.environment,
                ready_func=self._answers,
                ready_timeout=STARTUP_TIMEOUT_SECONDS,
                log=self.log,
            )
            await self._process.start()
            if not await self._process.ready():
                await self._process.kill()
                self._process = None
                raise MlflowUiUnavailable(
                    f"the MLflow UI did not start within {STARTUP_TIMEOUT_SECONDS} s; its log is "
                    "$AIR_HOME/logs/mlflow-ui.log and its errors are in the Jupyter server's log"
                )
            self.ready_at = time.monotonic()
            self.log.info("jupyter_air: MLflow UI ready after %.1f s.", self.ready_at - self.started_at)

    async def start_if_store_exists(self) -> None:
        """Start the UI in the background once the store exists (quietly: errors are logged)."""
        if self.running or self._lock.locked() or not self.store_exists():
            return
        try:
            await self.ensure_running()
        except MlflowUiUnavailable as err:
            self.log.warning("jupyter_air: %s", err)

    async def stop(self) -> None:
        if self.running:
            await self._process.terminate()
        self._process = None

    async def _answers(self, _process) -> bool:
        import aiohttp

        connector = aiohttp.UnixConnector(str(self.socket))
        try:
            async with (
                aiohttp.ClientSession(connector=connector) as session,
                session.get("http://localhost/health", allow_redirects=False) as response,
            ):
                return response.status < 500
        except (aiohttp.ClientError, OSError):
            return False
