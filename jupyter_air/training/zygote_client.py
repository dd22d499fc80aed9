"""AIR_HOME's resident zygote: a process that imported torch once, from which each kernel's fork server is forked,
so the first ``.distributed()`` of a new kernel does not wait for that import.

One per ``AIR_HOME``, Python, version of this code and of torch, and torch's load-time variables (:func:`key`),
started by the Jupyter server (``c.JupyterAir.fork_zygote_at_start``) or the first kernel that needs it, in a session
of its own. It holds a lock on ``AIR_HOME/forks-<key>.pid``
(its PID and start time) while it lives and listens on ``<temporary folder>/jupyter-air-forks-<key>/forks.sock``: a
folder of mode 0700, checked to be this user's before every use, never TCP; it takes connections of its own user only
(``SO_PEERCRED``). A kernel sends it two pipe ends, its environment and working folder; the forked fork server then
serves the kernel over them as one the kernel started itself would (:mod:`~jupyter_air.training.forkserver`), and ends
when the kernel goes. A remote call sends its job's id and supervisor log instead: the forked supervisor runs the job
as one started cold would, and asks the zygote for its call's fork server in turn; so does a Ray Job's entrypoint, for
the job's supervisor (:mod:`~jupyter_air.workloads.supervisor.relay`). The zygote stops after
``$AIR_FORKS_IDLE_SECONDS`` (default 1800) with nothing it forked left, removing its folder.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import importlib.util
import json
import logging
import os
import signal
import socket
import stat
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from jupyter_air import procs, residents
from jupyter_air.home import FILE_MODE, air_home

log = logging.getLogger(__name__)

#: Seconds with no fork server left after which the zygote stops (environment variable, and its default).
IDLE_ENV = "AIR_FORKS_IDLE_SECONDS"
DEFAULT_IDLE_SECONDS = 1800.0
FOLDER_PREFIX = "jupyter-air-forks-"
SOCKET_NAME = "forks.sock"
LOG_NAME = "forks.log"
#: Seconds a fork server (or a zygote) may take to import torch and say it is ready (a loaded machine is slow).
READY_SECONDS = 300.0
_PEER = struct.Struct("3i")  # SO_PEERCRED: pid, uid, gid
#: Variables read when torch and its libraries load (thread pools, devices, what is loaded): a kernel whose values
#: differ gets a zygote of its own, so its ranks start as a fork server it started itself would have.
_LOAD_TIME_PREFIXES = ("OMP_", "MKL_", "KMP_", "CUDA_", "NCCL_", "TORCH", "PYTORCH_", "LD_", "PYTHON")
#: Read later, not as torch loads: the GPUs when CUDA starts, which a zygote never does (it counts GPUs through NVML;
#: a remote call's supervisor sets them to the GPUs it holds), the debugger at each ``breakpoint()`` (set by
#: ``ray.init``): callers that differ only in these share a zygote.
_READ_LATER = ("CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER", "PYTHONBREAKPOINT")


def key(env: dict[str, str] | None = None) -> str:
    """What a zygote must share with its callers (of this process's environment, or ``env``): the user, AIR_HOME, the
    interpreter, this code, torch, and the variables read when torch loads."""
    env = os.environ if env is None else env
    package = Path(__file__).resolve().parents[1]
    torch = importlib.util.find_spec("torch")
    newest = max(p.stat().st_mtime_ns for p in package.rglob("*.py"))
    loading = sorted((k, v) for k, v in env.items() if k.startswith(_LOAD_TIME_PREFIXES) and k not in _READ_LATER)
    parts = [os.getuid(), str(air_home(env)), sys.executable, str(package), newest, os.stat(torch.origin).st_mtime_ns]
    return hashlib.sha256(json.dumps([*parts, loading]).encode()).hexdigest()[:16]


def socket_path(name: str, temp: str | None = None) -> Path:
    """The zygote's socket, in ``temp`` (default: this process's temporary folder)."""
    return Path(temp or tempfile.gettempdir()) / (FOLDER_PREFIX + name) / SOCKET_NAME


def lock_path(name: str) -> Path:
    return air_home() / f"forks-{name}.pid"


def fork_server(folder: Path, timeout: float) -> tuple[int, int] | None:
    """A fork server forked for this process by AIR_HOME's zygote (started unless one runs), its log in ``folder``:
    the ends of its request and event pipes this process keeps; None when no zygote can serve (the caller then
    starts a fork server of its own, which says what went wrong)."""
    name = key()
    connection = _reach(name, timeout)
    if connection is None:
        return None
    residents.hold(lock_path(name))
    request_read, request_write = os.pipe()
    event_read, event_write = os.pipe()
    try:
        request = {"env": dict(os.environ), "cwd": os.getcwd(), "folder": str(folder)}
        answer = _ask(connection, request, [request_read, event_write])
    finally:
        for fd in (request_read, event_write):
            os.close(fd)
    if answer is None:
        os.close(request_write)
        os.close(event_read)
        return None
    return request_write, event_read


def supervisor(job_run_id: str, env: dict[str, str], folder: Path, log: int, ray: bool = False) -> int | None:
    """Fork the job's supervisor from AIR_HOME's zygote for ``env`` when one runs or starts (none is started for it:
    its fork server would wait for that one), with ``env``, ``folder`` and this process's umask, its output to
    ``log``: its PID, or None (start it cold then). ``ray``: it drives Ray nodes (the zygote imports Ray first)."""
    connection = _reach(key(env), READY_SECONDS, start=False)
    return None if connection is None else _ask(connection, _supervisor_request(job_run_id, env, folder, ray), [log])


def ray_supervisor(job_run_id: str, env: dict[str, str], folder: Path, log: int) -> int | None:
    """:func:`supervisor` for a Ray Job's entrypoint (the ``ray-supervisor`` warm start of its relay), from a zygote
    of the submitter's environment ``env`` that is ready now (a supervisor started cold is sooner than one waiting for
    a zygote to import torch), its socket in ``env``'s temporary folder (Ray's environment may name another)."""
    temp = next((env[name] for name in ("TMPDIR", "TEMP", "TMP") if env.get(name)), "/tmp")
    path = socket_path(key(env), temp)
    connection = _connect(path) if private(path.parent) else None
    if connection is None:
        return None
    return _ask(connection, _supervisor_request(job_run_id, env, folder, ray=True), [log])


def _supervisor_request(job_run_id: str, env: dict[str, str], folder: Path, ray: bool) -> dict:
    umask = os.umask(0o077)
    os.umask(umask)
    return {"kind": "supervisor", "job_run_id": job_run_id, "env": env, "cwd": str(folder), "umask": umask, "ray": ray}


def _ask(connection: socket.socket, request: dict, fds: list[int]) -> int | None:
    """Send ``request`` (JSON) and ``fds`` to the zygote, then close the connection: the PID of what it forked, or
    None when it refused or went away."""
    try:
        socket.send_fds(connection, [json.dumps(request).encode() + b"\n"], fds)
        word, _, pid = connection.recv(32).decode().partition(" ")
    except (OSError, UnicodeDecodeError):
        return None
    finally:
        connection.close()
    return int(pid) if word == "ok" and pid.isdigit() else None


def warm() -> bool:
    """Start AIR_HOME's zygote for this process's environment unless one runs, without waiting for it; True when
    one was started."""
    name = key()
    residents.hold(lock_path(name))
    if locked(lock_path(name)):
        return False
    _spawn(name)
    return True


def _reach(name: str, timeout: float, start: bool = True) -> socket.socket | None:
    """A connection to the zygote ``name``, starting one unless one lives (with ``start``); None when its folder is
    not this user's alone, or no zygote came up (see ``AIR_HOME/logs/forks.log``)."""
    path = socket_path(name)
    started = None
    deadline = time.monotonic() + timeout
    while True:
        if os.path.lexists(path.parent) and not private(path.parent):
            log.warning("%s is not this user's alone (mode 0700): no resident fork server is used", path.parent)
            return None
        connection = _connect(path)
        if connection is not None:
            return connection
        if not locked(lock_path(name)):
            if not start:
                return None
            if started is not None and started.poll() is not None:
                return None  # it ended without serving: torch could not be imported, say
            if started is None:
                started = _spawn(name)
        if time.monotonic() > deadline:
            return None
        time.sleep(0.05)


def _connect(path: Path) -> socket.socket | None:
    connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        connection.connect(str(path))
        if peer(connection)[1] == os.getuid():
            return connection
    except OSError:
        pass
    connection.close()
    return None


def private(folder: Path) -> bool:
    """True when ``folder`` is a directory of this user that no one else may enter (not a link)."""
    try:
        info = folder.lstat()
    except OSError:
        return False
    return stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid() and info.st_mode & 0o077 == 0


def peer(connection: socket.socket) -> tuple[int, int, int]:
    return _PEER.unpack(connection.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, _PEER.size))


def locked(path: Path) -> bool:
    """True while a zygote holds ``path``'s lock."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, FILE_MODE)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return False
    except BlockingIOError:
        return True
    finally:
        os.close(fd)


def _spawn(name: str) -> subprocess.Popen:
    code = "import sys; sys.path.insert(0, sys.argv.pop(1)); from jupyter_air.training.zygote import main; main()"
    package_parent = str(Path(__file__).resolve().parents[2])
    command = [sys.executable, "-c", code, package_parent, str(socket_path(name)), str(lock_path(name))]
    return residents.start(command, LOG_NAME, (IDLE_ENV, DEFAULT_IDLE_SECONDS))


def holder(lock: Path) -> tuple[int, float | None] | None:
    """PID and start time of the live zygote that holds ``lock``, or None."""
    try:
        pid, started = lock.read_text().split()
        pid, started = int(pid), None if started == "None" else float(started)
    except (OSError, ValueError):
        return None
    return (pid, started) if locked(lock) and procs.is_alive(pid, started) else None


def stop(lock: Path, timeout: float = 30.0) -> bool:
    """Stop the zygote that holds ``lock`` (its fork servers go on serving their kernels); False when none ran."""
    if (held := holder(lock)) is None:
        return False
    pid, started = held
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while procs.is_alive(pid, started) and time.monotonic() < deadline:
        time.sleep(0.1)
    return True
