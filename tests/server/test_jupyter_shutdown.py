"""A real `jupyter server` process with the MLflow UI: it cleans up after itself on SIGTERM and SIGINT, leaving only
AIR_HOME's resident MLflow server (shared with kernels and `air`, it stops once idle); and it removes the socket
folders of MLflow servers that are gone when it starts."""

from __future__ import annotations

import os
import pathlib
import pty
import signal
import socket
import subprocess
import sys
import tempfile
import urllib.request

import psutil
import pytest
from resident_servers import resident_pids, stop_all, until

from jupyter_air import scratch
from jupyter_air.tracking import resident

REPO = pathlib.Path(__file__).resolve().parents[2]
TOKEN = "shutdown-test-token"
#: Seconds a new MLflow server may take to answer through the proxy (about 20 s on a quiet machine).
READY_SECONDS = 300


@pytest.fixture
def home(tmp_path):
    folder = tmp_path / "home"
    yield folder
    stop_all(folder)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _start(home: pathlib.Path, runtime: pathlib.Path, stdin) -> tuple[subprocess.Popen, str]:
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MLFLOW_", "JPY_"))}
    env.update(AIR_HOME=str(home), JUPYTER_RUNTIME_DIR=str(runtime), PYTHONPATH=str(REPO))
    env.update(JUPYTER_AIR_GPU_SOURCE="none", AIR_MLFLOW_IDLE_SECONDS="600")
    command = [sys.executable, "-m", "jupyter_server", f"--port={port}", "--ip=127.0.0.1"]
    command += ["--ServerApp.port_retries=0", f"--IdentityProvider.token={TOKEN}", "--ServerApp.open_browser=False"]
    command += ["--ServerApp.allow_root=True"]
    log_path = runtime.parent / f"jupyter-server-{port}.log"
    with open(log_path, "ab") as log:
        server = subprocess.Popen(command, env=env, cwd=home.parent, stdin=stdin, stdout=log, stderr=log)
    server.log = log_path
    base = f"http://127.0.0.1:{port}/"
    until(lambda: _answers(base + "jupyter-air/version") or server.poll() is not None, 120)
    assert server.poll() is None, log_path.read_text()
    return server, base


def _answers(url: str) -> bool:
    request = urllib.request.Request(url, headers={"Authorization": f"token {TOKEN}"})
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status == 200
    except OSError:
        return False


def _ours(home: pathlib.Path) -> list[psutil.Process]:
    """Processes started for ``home``, but for its resident MLflow server (which stays by design)."""
    keep = resident_pids(home)
    found = []
    for proc in psutil.process_iter():
        try:
            if proc.pid not in keep and proc.environ().get("AIR_HOME") == str(home) and proc.status() != "zombie":
                found.append(proc)
        except psutil.Error:
            continue
    return found


@pytest.fixture
def terminal():
    """A terminal for the server's input, as when it runs in one (Jupyter handles Ctrl-C only then)."""
    main, side = pty.openpty()
    yield side
    os.close(side)
    os.close(main)


def _stop(server: subprocess.Popen, stop_signal: int) -> int:
    """SIGTERM, or Ctrl-C twice in its terminal (the second skips Jupyter's confirmation)."""
    server.send_signal(stop_signal)
    if stop_signal == signal.SIGINT:
        until(lambda: server.poll() is not None or "interrupted" in server.log.read_text(), 30)
        server.send_signal(signal.SIGINT)
    return server.wait(timeout=60)


@pytest.mark.parametrize("stop_signal", [signal.SIGTERM, signal.SIGINT])
def test_a_stopped_jupyter_server_cleans_up_and_leaves_only_the_resident_mlflow_server(
    home, tmp_path, terminal, stop_signal
):
    # Given the socket folder of an MLflow server that is gone (killed with the Jupyter server that ran it)
    gone = pathlib.Path(tempfile.mkdtemp(prefix=resident.FOLDER_PREFIX))
    (gone / scratch.OWNER_NAME).write_text("999999 1.0")
    runtime = tmp_path / "runtime"

    # When a Jupyter server starts, Then it removes that folder
    server, base = _start(home, runtime, terminal)
    assert not gone.exists()

    # When its MLflow UI is opened, and the server is then stopped with a signal
    until(lambda: _answers(base + "mlflow/"), READY_SECONDS)
    mlflow_server = resident.read(resident.record_path(resident.embedded_uri(home), home))
    assert mlflow_server is not None and mlflow_server.alive()
    assert [p.name for p in runtime.glob("jpserver-*.json")] == [f"jpserver-{server.pid}.json"]
    code = _stop(server, stop_signal)

    # Then the Jupyter server ran its own clean-up: it exited and its runtime files are gone
    assert code in (0, -stop_signal), server.log.read_text()
    assert list(runtime.glob("jpserver-*")) == []
    # And of what jupyter_air started, only AIR_HOME's MLflow server is left, for kernels and `air`
    until(lambda: not _ours(home), 30)
    assert mlflow_server.alive() and mlflow_server.answers()

    # When another Jupyter server starts on the same AIR_HOME, Then its UI is that same MLflow server
    again, base = _start(home, runtime, terminal)
    try:
        until(lambda: _answers(base + "mlflow/"), READY_SECONDS)
        assert resident.read(resident.record_path(resident.embedded_uri(home), home)) == mlflow_server
    finally:
        _stop(again, stop_signal)
    assert list(runtime.glob("jpserver-*")) == []


def test_a_killed_jupyter_server_leaves_the_resident_mlflow_server_to_its_idle_stop(home, tmp_path, terminal):
    # Given a Jupyter server whose MLflow UI was opened
    runtime = tmp_path / "runtime"
    server, base = _start(home, runtime, terminal)
    until(lambda: _answers(base + "mlflow/"), READY_SECONDS)
    mlflow_server = resident.read(resident.record_path(resident.embedded_uri(home), home))

    # When it is killed (SIGKILL: nothing of it runs any more)
    server.kill()
    server.wait(timeout=60)

    # Then only Jupyter's runtime file (which nothing could remove) and AIR_HOME's MLflow server are left: the
    # server goes on serving kernels and `air`, and stops once idle (AIR_MLFLOW_IDLE_SECONDS)
    assert [p.name for p in runtime.glob("jpserver-*.json")] == [f"jpserver-{server.pid}.json"]
    until(lambda: not _ours(home), 30)
    assert mlflow_server.alive() and mlflow_server.answers()
    assert float(_env_of(mlflow_server.pid)[resident.IDLE_ENV]) == 600


def _env_of(pid: int) -> dict[str, str]:
    return psutil.Process(pid).environ()
