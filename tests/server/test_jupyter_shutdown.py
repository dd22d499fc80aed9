"""A real `jupyter server` process with the MLflow UI: it cleans up after itself on SIGTERM and SIGINT, and what it
started for AIR_HOME (its MLflow server, its fork server zygote) stops with it, even when it is killed, unless another
process holds them (then they keep their idle stop), and a remote call whose supervisor its zygote forked runs on; and
it removes the socket folders of MLflow servers that are gone when it starts."""

from __future__ import annotations

import contextlib
import io
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
from resident_servers import resident_pids, stop_all, until, zygote_locks

from jupyter_air import residents, scratch
from jupyter_air.tracking import resident
from jupyter_air.training import zygote_client

REPO = pathlib.Path(__file__).resolve().parents[2]
TOKEN = "shutdown-test-token"
#: Seconds a new MLflow server may take to answer through the proxy (about 20 s on a quiet machine).
READY_SECONDS = 300
#: A kernel's remote call on 2 CPU ranks, which wait for the test to let them end.
REMOTE_CALL = """\
import os, pathlib, sys, time
from jupyter_air import distributed

started, release = sys.argv[1:]

@distributed(gpus=2, experiment="outlives-server")
def train(scale):
    rank = int(os.environ["RANK"])
    pathlib.Path(started + str(rank)).touch()
    while not pathlib.Path(release).exists():
        time.sleep(0.1)
    return rank * scale

train.distributed(10, remote=True)
"""


@pytest.fixture
def home(tmp_path):
    """The servers' AIR_HOME; whatever of it still runs when the test ends (a failed one) is stopped."""
    folder = tmp_path / "home"
    yield folder
    stop_all(folder)
    for proc in _ours(folder):
        with contextlib.suppress(psutil.Error):
            proc.kill()


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
    server.log, server.env = log_path, env
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
    """Processes started for ``home``: the Jupyter server's own, and its resident MLflow server and zygote."""
    found = []
    for proc in psutil.process_iter():
        try:
            if proc.environ().get("AIR_HOME") == str(home) and proc.status() != "zombie":
                found.append(proc)
        except psutil.Error:
            continue
    return found


def _residents_up(home: pathlib.Path) -> tuple[resident.Server, tuple[int, float | None]]:
    """AIR_HOME's MLflow server (the UI was opened) and the zygote the server started for its kernels."""
    mlflow_server = resident.read(resident.record_path(resident.embedded_uri(home), home))
    until(lambda: zygote_locks(home) and zygote_client.holder(zygote_locks(home)[0]), 120)
    assert mlflow_server is not None and mlflow_server.alive()
    return mlflow_server, zygote_client.holder(zygote_locks(home)[0])


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
def test_a_stopped_jupyter_server_cleans_up_and_what_it_started_stops_with_it(home, tmp_path, terminal, stop_signal):
    # Given the socket folder of an MLflow server that is gone (killed with the Jupyter server that ran it)
    gone = pathlib.Path(tempfile.mkdtemp(prefix=resident.FOLDER_PREFIX))
    (gone / scratch.OWNER_NAME).write_text("999999 1.0")
    runtime = tmp_path / "runtime"

    # When a Jupyter server starts, Then it removes that folder
    server, base = _start(home, runtime, terminal)
    assert not gone.exists()

    # When its MLflow UI is opened (its zygote is up too), and the server is then stopped with a signal
    until(lambda: _answers(base + "mlflow/"), READY_SECONDS)
    _residents_up(home)
    assert [p.name for p in runtime.glob("jpserver-*.json")] == [f"jpserver-{server.pid}.json"]
    code = _stop(server, stop_signal)

    # Then the Jupyter server ran its own clean-up: it exited and its runtime files are gone
    assert code in (0, -stop_signal), server.log.read_text()
    assert list(runtime.glob("jpserver-*")) == []
    # And nothing it started for AIR_HOME is left (a wait, about 5 s: its residents settle 3 s, then stop)
    # (a process in its exit has no environment left to read before it is gone: both views must agree)
    until(lambda: not _ours(home) and not resident_pids(home), 60)


def test_a_killed_jupyter_server_leaves_nothing_running_either(home, tmp_path, terminal):
    # Given a Jupyter server whose MLflow UI was opened
    runtime = tmp_path / "runtime"
    server, base = _start(home, runtime, terminal)
    until(lambda: _answers(base + "mlflow/"), READY_SECONDS)
    _residents_up(home)

    # When it is killed (SIGKILL: nothing of it runs any more)
    server.kill()
    server.wait(timeout=60)

    # Then only Jupyter's runtime file (which nothing could remove) is left: its MLflow server and zygote see it gone
    assert [p.name for p in runtime.glob("jpserver-*.json")] == [f"jpserver-{server.pid}.json"]
    until(lambda: not _ours(home), 60)


def test_a_remote_call_outlives_the_killed_server_whose_zygote_forked_its_supervisor(
    home, tmp_path, terminal, monkeypatch
):
    from jupyter_air import attach
    from jupyter_air.workloads.jobs.jobs import Jobs

    # Given a Jupyter server whose MLflow UI was opened, and a remote call that a process of its (as its kernel)
    # made, whose 2 ranks run until the test lets them end
    runtime = tmp_path / "runtime"
    server, base = _start(home, runtime, terminal)
    until(lambda: _answers(base + "mlflow/"), READY_SECONDS)
    _, (zygote, _) = _residents_up(home)
    started, release = tmp_path / "started", tmp_path / "release"
    submitter = subprocess.Popen(
        [sys.executable, "-c", REMOTE_CALL, str(started), str(release)], env=server.env, cwd=tmp_path
    )
    until(lambda: all(pathlib.Path(f"{started}{rank}").exists() for rank in (0, 1)), 120)
    monkeypatch.setenv("AIR_HOME", str(home))
    try:
        (job,) = Jobs().list()
        # And its supervisor started warm, forked from the zygote the server started
        assert psutil.Process(job.supervisor_pid).ppid() == zygote

        # When the server and that process are killed (SIGKILL: nothing of them runs any more)
        for process in (server, submitter):
            process.kill()
            process.wait(timeout=60)

        # Then the call runs on past the residents' look at the gone server; let end, attach returns its results
        until(lambda: "kept for" in (home / "logs" / "mlflow-ui.log").read_text(), 60)
        assert Jobs().get(job.job_run_id).status == "RUNNING"
        release.touch()
        with contextlib.redirect_stdout(io.StringIO()):
            assert attach(job.job_run_id) == [0, 10]
        assert Jobs().get(job.job_run_id).status == "SUCCEEDED"
    finally:
        release.touch()

    # And then the zygote stops, nothing it forked left; the MLflow server, which the call's processes held when the
    # server was found gone, keeps its idle stop; of the server only its runtime file (nothing could remove it) is left
    until(lambda: zygote_client.holder(zygote_locks(home)[0]) is None, 60)
    until(lambda: {p.pid for p in _ours(home)} <= resident_pids(home), 60)
    assert [p.name for p in runtime.glob("jpserver-*.json")] == [f"jpserver-{server.pid}.json"]


def test_what_another_process_holds_outlives_the_server_to_its_idle_stop(home, tmp_path, terminal, monkeypatch):
    # Given a Jupyter server whose MLflow UI and zygote this process uses too (as a kernel of another server would)
    runtime = tmp_path / "runtime"
    server, base = _start(home, runtime, terminal)
    until(lambda: _answers(base + "mlflow/"), READY_SECONDS)
    mlflow_server, zygote = _residents_up(home)
    monkeypatch.setenv("AIR_HOME", str(home))
    assert resident.find(resident.embedded_uri(home)) == mlflow_server
    residents.hold(zygote_locks(home)[0])  # as a kernel of another server does when it gets a fork server there

    # When the server is stopped
    _stop(server, signal.SIGTERM)

    # Then both say they are kept for this process, and go on serving until idle
    for log in ("mlflow-ui.log", "forks.log"):
        until(lambda log=log: f"kept for [{os.getpid()}] until idle" in (home / "logs" / log).read_text(), 60)
    assert mlflow_server.alive() and mlflow_server.answers() and zygote_client.holder(zygote_locks(home)[0]) == zygote
    assert float(_env_of(mlflow_server.pid)[resident.IDLE_ENV]) == 600


def _env_of(pid: int) -> dict[str, str]:
    return psutil.Process(pid).environ()
