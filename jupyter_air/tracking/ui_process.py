"""The embedded MLflow UI process of one Jupyter server: started in the background once the store exists (so
the first run page opens at once), or on the first request to ``{base_url}mlflow/``; stopped with the server."""

from __future__ import annotations

import asyncio
import logging
import sys
import time
from pathlib import Path

from jupyter_air.tracking.proxy import STARTUP_TIMEOUT_SECONDS
from jupyter_air.tracking.store import sqlite_path, store_problem, tracking_uri

#: Seconds between two looks at whether the UI process exited while it starts; tries to kill it once it has.
_EXIT_POLL_SECONDS = 0.2
_KILL_TRIES = 50


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
            problem = await self._until_ready()
            if problem is not None:
                self._process = None
                raise MlflowUiUnavailable(problem)
            self.ready_at = time.monotonic()
            self.log.info("jupyter_air: MLflow UI ready after %.1f s.", self.ready_at - self.started_at)

    async def _until_ready(self) -> str | None:
        """Wait until the UI answers (None), or kill it and say why it will not: it exited (said at once, not
        after the start timeout, while simpervisor would start it again and again), or it did not answer in time."""
        first = self._process.proc
        ready = asyncio.ensure_future(self._process.ready())
        while not ready.done():
            await asyncio.wait([ready], timeout=_EXIT_POLL_SECONDS)
            if not ready.done() and (self._process.proc is not first or first.returncode is not None):
                ready.cancel()
                await self._kill_for_good()
                store = await asyncio.get_running_loop().run_in_executor(None, store_problem)
                return f"the MLflow UI exited while starting (code {first.returncode}): " + (
                    store or "its errors are in the Jupyter server's log"
                )
        if ready.result():
            return None
        await self._kill_for_good()
        return (
            f"the MLflow UI did not start within {STARTUP_TIMEOUT_SECONDS} s; its log is "
            "$AIR_HOME/logs/mlflow-ui.log and its errors are in the Jupyter server's log"
        )

    async def _kill_for_good(self) -> None:
        """Kill the UI process, and so keep simpervisor from starting it again (it restarts one that exits with an
        error): a process that has exited and is not started again yet cannot be signalled, so try until it is."""
        for _ in range(_KILL_TRIES):
            try:
                await self._process.kill()
                return
            except ProcessLookupError:  # it exited: started again soon, unless it exited with 0
                if self._process.proc.returncode == 0:
                    return
                await asyncio.sleep(_EXIT_POLL_SECONDS)

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
