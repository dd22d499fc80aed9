"""A real `mlflow server` over HTTP on 127.0.0.1 for tests: SQLite, served artifacts, one worker; stopped with its
process group."""

from __future__ import annotations

import contextlib
import os
import pathlib
import signal
import socket
import subprocess
import sys
import time
import urllib.request

#: Seconds `mlflow server` may take to answer /health (about 20 s on a quiet machine).
START_SECONDS = 300


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class TrackingServer:
    """Started at once (its start overlaps the caller's own set-up); :meth:`ready` waits until it answers."""

    def __init__(self, folder: pathlib.Path, *args: str, env: dict[str, str] | None = None):
        self.folder = folder
        self.uri = f"http://127.0.0.1:{_free_port()}"
        command = [sys.executable, "-m", "mlflow", "server", "--workers", "1", *args]
        command += ["--backend-store-uri", f"sqlite:///{folder / 'mlflow.db'}", "--serve-artifacts"]
        command += ["--artifacts-destination", str(folder / "artifacts"), "--host", "127.0.0.1"]
        command += ["--port", self.uri.rsplit(":", 1)[1]]
        with open(folder / "server.log", "wb") as log:
            self.process = subprocess.Popen(
                command, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True
            )

    def ready(self) -> str:
        """The server's URI once it answers ``/health``; fails with the end of its log if it exits or is late."""
        deadline = time.monotonic() + START_SECONDS
        while True:
            try:
                with urllib.request.urlopen(f"{self.uri}/health", timeout=5) as answer:
                    if answer.status == 200:
                        return self.uri
            except OSError:
                pass
            late = time.monotonic() > deadline
            assert self.process.poll() is None and not late, (self.folder / "server.log").read_text()[-3000:]
            time.sleep(0.5)

    def stop(self) -> None:
        os.killpg(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()


@contextlib.contextmanager
def tracking_server(folder: pathlib.Path, *args: str, env: dict[str, str] | None = None):
    """A :class:`TrackingServer` in ``folder``, stopped at the end."""
    server = TrackingServer(folder, *args, env=env)
    try:
        yield server
    finally:
        server.stop()
