"""The embedded MLflow server of one ``AIR_HOME``: one resident process per local store, shared by kernels, ``air``,
supervisors and the Jupyter server's UI route.

It is started on demand and found through its record, ``AIR_HOME/mlflow-server.json`` (0600: pid, start time,
socket, store), written under a file lock so concurrent starters make one process. It listens on a Unix socket
in a new folder of mode 0700 (never on TCP), is started again when gone, and stops by itself after
``$AIR_MLFLOW_IDLE_SECONDS`` (default 1800) without a request, removing its record and folder.
"""

from __future__ import annotations

import contextlib
import hashlib
import http.client
import json
import os
import shutil
import signal
import socket as socketlib
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from jupyter_air import procs, residents, scratch
from jupyter_air.home import air_home, file_lock
from jupyter_air.tracking.http_session import UnixConnection  # here, not in answers(): a thread's first import can race

#: Seconds without a request after which the server stops (environment variable, and its default).
IDLE_ENV = "AIR_MLFLOW_IDLE_SECONDS"
DEFAULT_IDLE_SECONDS = 1800.0
#: Where servers listen: ``<temporary folder>/jupyter-air-mlflow-XXXX/mlflow.sock`` (the folder 0700).
FOLDER_PREFIX = "jupyter-air-mlflow-"
SOCKET_NAME = "mlflow.sock"
#: Seconds after its start from which a live server without its socket file counts as stuck (a cleaner of the
#: temporary folder removed it), and is replaced: far more than any start takes.
STUCK_AFTER_SECONDS = 600.0
#: Seconds after which a socket folder without an owner (made by an earlier version, or by a starter killed at once)
#: whose socket accepts no connection counts as left behind.
UNOWNED_STALE_SECONDS = 600.0
#: The server's request log (and its warnings and errors) under ``AIR_HOME/logs``.
LOG_NAME = "mlflow-ui.log"


def idle_seconds() -> float:
    """``$AIR_MLFLOW_IDLE_SECONDS`` or its default: how long the server stays idle before it stops."""
    return residents.idle_seconds(IDLE_ENV, DEFAULT_IDLE_SECONDS)


def embedded_uri(home: Path | None = None) -> str:
    return f"sqlite:///{(home or air_home()) / 'mlflow.db'}"


def record_path(uri: str, home: Path | None = None) -> Path:
    """``AIR_HOME/mlflow-server.json`` for the embedded store; another local store gets a record of its own."""
    home = home or air_home()
    if uri == embedded_uri(home):
        return home / "mlflow-server.json"
    return home / f"mlflow-server-{hashlib.sha256(uri.encode()).hexdigest()[:12]}.json"


@dataclass(frozen=True)
class Server:
    """One resident MLflow server, as its record describes it."""

    pid: int
    started: float | None
    socket: str
    uri: str

    def alive(self) -> bool:
        return procs.is_alive(self.pid, self.started)

    def answers(self, timeout: float = 2.0) -> bool:
        """True when it answers its health check within ``timeout`` seconds."""
        connection = UnixConnection(self.socket, timeout)
        try:
            connection.request("GET", "/health")
            return connection.getresponse().status == 200
        except (OSError, http.client.HTTPException):
            return False
        finally:
            connection.close()

    def stuck(self) -> bool:
        """Alive but unreachable for good: its socket is gone (a cleaner emptied the temporary folder) well after
        it started."""
        started = self.started or 0.0
        return not os.path.exists(self.socket) and time.time() - started > STUCK_AFTER_SECONDS


def read(record: Path) -> Server | None:
    try:
        return Server(**json.loads(record.read_text()))
    except (OSError, ValueError, TypeError):
        return None


def find(uri: str) -> Server | None:
    """The live server of store ``uri``, or None."""
    record = record_path(uri)
    server = read(record)
    if server is None or not server.alive():
        return None
    residents.hold(record)
    return server


def ensure(uri: str) -> Server:
    """The server of store ``uri``, started (without waiting for it to answer) unless one is alive."""
    record = record_path(uri)
    with file_lock(record.with_suffix(".lock")):
        server = read(record)
        residents.hold(record)
        if server is not None and server.alive() and not server.stuck():
            return server
        if server is not None:
            _discard(server)
        remove_stale_folders()
        server = _spawn(uri, record)
        staging = record.with_suffix(".tmp")
        with open(os.open(staging, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w") as out:
            json.dump(asdict(server), out)
        os.replace(staging, record)
        return server


def forget(record: Path, pid: int) -> None:
    """Remove ``record`` if it still names process ``pid`` (a server that stops)."""
    with file_lock(record.with_suffix(".lock")):
        server = read(record)
        if server is not None and server.pid == pid:
            record.unlink(missing_ok=True)


def stop(record: Path, timeout: float = 30.0) -> bool:
    """Stop the server of ``record`` (SIGTERM, then SIGKILL after ``timeout``); False when none ran."""
    server = read(record)
    if server is None:
        return False
    running = server.alive()
    if running:
        with contextlib.suppress(ProcessLookupError):
            os.kill(server.pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout
        while server.alive() and time.monotonic() < deadline:
            time.sleep(0.1)
    _discard(server)
    forget(record, server.pid)
    return running


def _discard(server: Server) -> None:
    """Stop what is left of a server that is dead or stuck, and remove its socket folder."""
    if server.alive():
        procs.stop_tree(server.pid, server.started)
    shutil.rmtree(Path(server.socket).parent, ignore_errors=True)


def remove_stale_folders() -> list[Path]:
    """Remove this user's socket folders whose server is gone (killed servers, Jupyter servers killed with the
    UI of an earlier version); returns them. A folder without an owner counts when its socket refuses
    connections ``UNOWNED_STALE_SECONDS`` after the folder was made."""
    removed = []
    for folder in Path(tempfile.gettempdir()).glob(FOLDER_PREFIX + "*"):
        try:
            info = folder.lstat()
        except OSError:
            continue
        if info.st_uid != os.getuid() or not folder.is_dir() or folder.is_symlink():
            continue
        if _dead(folder, info.st_mtime):
            shutil.rmtree(folder, ignore_errors=True)
            removed.append(folder)
    return removed


def _dead(folder: Path, made: float) -> bool:
    gone = scratch.owner_gone(folder)
    if gone is not None:
        return gone
    # No owner: only a socket that refuses connections tells its server is gone (an earlier version's folder
    # stays empty until its UI starts, which may be hours after its Jupyter server started).
    socket = folder / SOCKET_NAME
    if time.time() - made < UNOWNED_STALE_SECONDS or not socket.is_socket():
        return False
    probe = socketlib.socket(socketlib.AF_UNIX, socketlib.SOCK_STREAM)
    try:
        probe.settimeout(5.0)
        probe.connect(str(socket))
    except ConnectionRefusedError:
        return True
    except OSError:
        return False
    finally:
        probe.close()
    return False


def _spawn(uri: str, record: Path) -> Server:
    """Start ``python -m jupyter_air.tracking.ui_server`` as a resident process of AIR_HOME."""
    home = air_home()
    folder = Path(tempfile.mkdtemp(prefix=FOLDER_PREFIX))  # mode 0700
    socket = folder / SOCKET_NAME
    env = {
        "AIR_HOME": str(home),
        "MLFLOW_TRACKING_URI": uri,
        "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false",  # MLflow's GenAI job runner: processes the UI does not need
        "TMPDIR": str(folder),  # MLflow's copies of uploads in progress: owner-only, and gone with the folder
    }
    command = [sys.executable, "-m", "jupyter_air.tracking.ui_server", str(socket), uri, str(record)]
    process = residents.start(command, LOG_NAME, (IDLE_ENV, DEFAULT_IDLE_SECONDS), env)
    started = scratch.claim(folder, process.pid)  # the server owns its socket folder (found dead by others)
    return Server(process.pid, started, str(socket), uri)
