"""AIR_HOME's resident MLflow server: one process however many start it, restarted when gone, stopped when idle,
on a Unix socket no other user can reach; stale socket folders removed."""

from __future__ import annotations

import json
import os
import pathlib
import signal
import socket
import stat
import subprocess
import sys
import time

import psutil
import pytest
from resident_servers import stop_all, until

from jupyter_air import scratch
from jupyter_air.tracking import resident
from jupyter_air.tracking.store import tracker, tracking_uri

REPO = pathlib.Path(__file__).resolve().parents[2]
#: Seconds a new MLflow server may take to answer (about 20 s on a quiet machine, far more on a busy one).
READY_SECONDS = 300
IDLE_SECONDS = 20

PROBE = """
import socket
try:
    socket.socket(socket.AF_UNIX).connect({socket!r})
except OSError as exc:
    print(type(exc).__name__)
else:
    print("connected")
"""
ENSURE = "from jupyter_air.tracking import resident, store; print(resident.ensure(store.tracking_uri()).pid)"


@pytest.fixture
def fresh_home(tmp_path, monkeypatch):
    """An AIR_HOME of its own, on the embedded store, whose server stops after IDLE_SECONDS without a request."""
    home = tmp_path / "home"
    monkeypatch.setenv("AIR_HOME", str(home))
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    monkeypatch.setenv(resident.IDLE_ENV, str(IDLE_SECONDS))
    yield home
    stop_all(home)


def _servers_of(home: pathlib.Path) -> list[psutil.Process]:
    found = []
    for proc in psutil.process_iter(["cmdline"]):
        try:
            if "jupyter_air.tracking.ui_server" in proc.info["cmdline"] and proc.environ().get("AIR_HOME") == str(home):
                found.append(proc)
        except (psutil.Error, TypeError):
            continue
    return found


def _dead_socket_folder(
    tmp: pathlib.Path, owner: str | None, age_seconds: float, with_socket: bool = True
) -> pathlib.Path:
    """A socket folder as a killed server leaves it: a socket file nothing listens on, optionally an owner."""
    import tempfile

    folder = pathlib.Path(tempfile.mkdtemp(prefix=resident.FOLDER_PREFIX, dir=tmp))
    if with_socket:
        with socket.socket(socket.AF_UNIX) as listener:
            listener.bind(str(folder / resident.SOCKET_NAME))
    if owner is not None:
        (folder / scratch.OWNER_NAME).write_text(owner)
    os.utime(folder, (time.time() - age_seconds, time.time() - age_seconds))
    return folder


@pytest.mark.timeout(3 * READY_SECONDS)  # it waits for two servers to answer, then for one to stop
def test_one_server_per_air_home_private_restarted_when_gone_and_stopped_when_idle(fresh_home, tmp_path):
    # Given socket folders left by servers that are gone: one of an earlier version (no owner) and one whose
    # owner died, and the folder of a live server that must stay
    import tempfile

    tmp = pathlib.Path(tempfile.gettempdir())
    unowned = _dead_socket_folder(tmp, None, age_seconds=3600)
    dead_owner = _dead_socket_folder(tmp, "999999 1.0", age_seconds=0)
    live = _dead_socket_folder(tmp, f"{os.getpid()} {psutil.Process().create_time()}", age_seconds=3600)
    # and the folder of an earlier version's Jupyter server whose UI has not started yet (empty), which must stay
    waiting = _dead_socket_folder(tmp, None, age_seconds=3600, with_socket=False)
    try:
        # When four processes start AIR_HOME's server at once
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        starters = [
            subprocess.Popen([sys.executable, "-c", ENSURE], env=env, stdout=subprocess.PIPE, text=True)
            for _ in range(4)
        ]
        pids = {int(p.communicate(timeout=120)[0]) for p in starters}

        # Then they all found one and the same server, the only one of this AIR_HOME
        assert len(pids) == 1 and [p.pid for p in _servers_of(fresh_home)] == list(pids)
        # And the folders of gone servers were removed, the live one's and the waiting one kept
        assert not unowned.exists() and not dead_owner.exists() and live.exists() and waiting.exists()
    finally:
        import shutil

        for folder in (unowned, dead_owner, live, waiting):
            shutil.rmtree(folder, ignore_errors=True)

    server = resident.find(tracking_uri())
    eventually_answers(server)
    # And it is recorded owner-only in AIR_HOME and listens on a Unix socket in a 0700 folder, on no TCP port
    record = resident.record_path(tracking_uri())
    assert stat.S_IMODE(record.stat().st_mode) == 0o600
    assert json.loads(record.read_text())["pid"] == server.pid
    assert stat.S_IMODE(pathlib.Path(server.socket).parent.stat().st_mode) == 0o700
    # (one process: it serves MLflow's app itself)
    (process,) = [psutil.Process(server.pid), *psutil.Process(server.pid).children(recursive=True)]
    assert [c for c in process.net_connections("inet") if c.status == psutil.CONN_LISTEN] == []
    # And its temp files (MLflow's copies of uploads in progress) go into that folder, not the shared /tmp
    assert process.environ().get("TMPDIR") == str(pathlib.Path(server.socket).parent)
    # And another local user cannot connect to it
    probe = PROBE.format(socket=server.socket)
    other = subprocess.run(
        ["runuser", "-u", "nobody", "--", "/usr/bin/python3.11", "-c", probe], capture_output=True, text=True
    )
    assert other.stdout.strip() == "PermissionError", other

    # Given a client using it, When the server is killed (SIGKILL: no clean-up of its own)
    client = tracker()
    assert client.origin == f"unix:{server.socket}"
    os.kill(server.pid, signal.SIGKILL)
    until(lambda: _refuses(server.socket), 30)
    # And the client's next call still works, and AIR_HOME gets a new server
    assert client.get_experiment_by_name("Default").experiment_id == "0"
    restarted = resident.find(tracking_uri())
    assert restarted is not None and restarted.pid != server.pid
    assert not pathlib.Path(server.socket).parent.exists()  # the dead one's folder is gone

    # When nobody asks it anything for IDLE_SECONDS once it answers
    eventually_answers(restarted)
    until(lambda: not restarted.alive(), IDLE_SECONDS + READY_SECONDS)

    # Then it stopped by itself, removing its record and its socket folder
    assert not record.exists() and not pathlib.Path(restarted.socket).parent.exists()
    assert _servers_of(fresh_home) == []


def _refuses(path: str) -> bool:
    """True once nothing listens on the Unix socket ``path`` any more (or its file is gone: any other call's
    search for a server removes a dead one's folder)."""
    with socket.socket(socket.AF_UNIX) as probe:
        try:
            probe.connect(path)
        except (ConnectionRefusedError, FileNotFoundError):
            return True
    return False


def eventually_answers(server: resident.Server) -> None:
    until(lambda: server.answers() or not server.alive(), READY_SECONDS)
    assert server.alive(), "the MLflow server exited while starting; see AIR_HOME/logs/mlflow-ui.log"


def test_a_store_without_a_server_falls_back_to_mlflows_client_and_says_so_once(store, tmp_path, monkeypatch, caplog):
    # Given a local store other than AIR_HOME's own, which no server serves
    from jupyter_air.tracking.inprocess import InProcessTracking
    from jupyter_air.tracking.lifecycle import ManagedRun
    from jupyter_air.tracking.store import ensure_experiment

    other = f"sqlite:///{tmp_path / 'other.db'}"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", other)

    # When runs are made in it twice
    for name in ("first", "second"):
        with ManagedRun.create(ensure_experiment("fallback"), run_name=name, tags={}) as run:
            assert isinstance(run.client, InProcessTracking)

    # Then they are recorded, and why MLflow's client is used was said once
    said = [r.getMessage() for r in caplog.records if "MLflow's client in this process" in r.getMessage()]
    assert len(said) == 1 and other in said[0]
    assert isinstance(tracker(), InProcessTracking)
    assert len([r for r in caplog.records if "MLflow's client in this process" in r.getMessage()]) == 1


KERNEL_CELLS = [
    "%load_ext jupyter_air",
    "%%air_run --experiment kernel-rest --run-name quiet\nvalue = sum(range(10))\nvalue",
    "import sys\nprint(sorted(m for m in ('mlflow', 'torch') if m in sys.modules))",
    "%%air_run --experiment kernel-rest --run-name logs\nimport mlflow\nmlflow.log_metric('loss', 0.25)\n"
    "print('active', mlflow.active_run().info.run_name)",
    "print('after', mlflow.active_run())",
]


@pytest.mark.usefixtures("no_orphans")
def test_a_kernel_tracks_cells_through_the_server_without_importing_mlflow(store, runs_of, monkeypatch, tmp_path):
    import nbformat
    from nbclient import NotebookClient
    from notebook_helpers import outputs_text

    # Given AIR_HOME's MLflow server, resident (a kernel restarted during the day finds it running)
    eventually_answers(resident.ensure(tracking_uri()))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(src) for src in KERNEL_CELLS])
    client = NotebookClient(nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}})

    # When a fresh kernel loads the magics and runs a tracked cell, then one that uses MLflow itself
    with client.setup_kernel():
        for index, cell in enumerate(nb.cells):
            client.execute_cell(cell, index)

    # Then the first tracked cell left neither MLflow nor PyTorch in the kernel
    assert outputs_text(nb.cells[1]).strip().endswith("45")
    assert outputs_text(nb.cells[2]).strip() == "[]"
    # And a cell importing MLflow logs to its own run, the kernel's active run during the cell only
    assert "active logs" in outputs_text(nb.cells[3]) and outputs_text(nb.cells[4]).strip() == "after None"
    logs, quiet = runs_of("kernel-rest")
    assert (quiet.info.run_name, quiet.info.status, quiet.data.tags["air.source"]) == ("quiet", "FINISHED", "magic")
    assert "system/cpu_utilization_percentage" in quiet.data.metrics
    assert (logs.info.status, logs.data.metrics["loss"]) == ("FINISHED", 0.25)


SUPERVISED = """
import sys
from jupyter_air.home import air_home
from jupyter_air.tracking.store import tracking_uri
from jupyter_air.workloads.state.store import JobStore
from jupyter_air.workloads.supervisor.process import Supervisor

spec = {
    "experiment_name": "supervised-rest", "command": "echo $MLFLOW_RUN_ID", "compute": {"num_accelerators": 0},
    "env_variables": {}, "parameters": {"lr": 0.1}, "max_retries": 0, "retry_delay_seconds": 0,
    "timeout_minutes": None, "mlflow_run_name": "supervised", "mlflow_artifact_location": None,
    "code_source": {"root_path": sys.argv[1]},
}
store = JobStore(air_home())
job = store.create_job(spec, "w.yaml", "me", "local", tracking_uri())
code = Supervisor(store, job.job_run_id).run()
print(code, store.get(job.job_run_id).attempts[0].mlflow_run_id, "mlflow" in sys.modules)
"""

SUBMIT = """
import atexit, sys
atexit.register(lambda: print("mlflow imported:", "mlflow" in sys.modules))
from jupyter_air.cli import main
sys.exit(main(["run", "-f", sys.argv[1]]))
"""


@pytest.mark.usefixtures("no_orphans")
def test_air_run_and_its_supervisor_make_the_run_without_importing_mlflow(store, runs_of, tmp_path):
    # Given AIR_HOME's MLflow server just started again, not answering yet, and a workload on AIR_HOME's own store
    resident.stop(resident.record_path(tracking_uri()))
    starting = resident.ensure(tracking_uri())
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    workload = tmp_path / "w.yaml"
    workload.write_text("experiment_name: submitted-rest\ncommand: 'true'\ncompute: {num_accelerators: 0}\n")

    # When a supervisor runs an attempt (it waits for the server rather than import MLflow), and then, the server
    # answering, `air run` submits the workload
    answered_before = starting.answers()
    supervised = subprocess.run(
        [sys.executable, "-c", SUPERVISED, str(tmp_path)], env=env, capture_output=True, text=True, timeout=300
    )
    eventually_answers(starting)
    submitted = subprocess.run(
        [sys.executable, "-c", SUBMIT, str(workload)], env=env, capture_output=True, text=True, timeout=120
    )

    # Then neither imported MLflow, and the attempt's run was made, with its params, and ended
    assert not answered_before
    assert submitted.returncode == 0 and "mlflow imported: False" in submitted.stdout, submitted
    code, run_id, imported = supervised.stdout.split()
    assert (code, imported) == ("0", "False"), supervised.stderr
    (run,) = runs_of("supervised-rest")
    assert (run.info.run_id, run.info.status, run.data.params) == (run_id, "FINISHED", {"lr": "0.1"})
    until(lambda: not any(j.active for j in _jobs()), 120)  # the submitted job ends too


def _jobs():
    from jupyter_air.home import air_home
    from jupyter_air.workloads.state.store import JobStore

    return JobStore(air_home()).list(active_only=False, limit=100)
