"""The zygote's own process (:mod:`~jupyter_air.training.zygote_client` starts and asks it): imports torch and the job
supervisor once, then forks a fork server for each kernel that asks, with that kernel's environment, folder and pipes,
and a detached supervisor for each remote call submitted while it runs."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import select
import shutil
import signal
import socket
import sys
import time
from pathlib import Path

from jupyter_air import procs
from jupyter_air.home import FILE_MODE
from jupyter_air.residents import StarterWatch, holders_dir, idle_seconds
from jupyter_air.training import forkserver
from jupyter_air.training.zygote_client import DEFAULT_IDLE_SECONDS, IDLE_ENV, peer, private
from jupyter_air.workloads.supervisor import process  # imported once here: a supervisor forked from it starts warm


def main() -> None:
    """The zygote: ``argv[1]`` its socket, ``argv[2]`` its lock; ends at once when another holds the lock."""
    socket_file, lock = Path(sys.argv[1]), Path(sys.argv[2])
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(0))
    held = os.open(lock, os.O_RDWR | os.O_CREAT, FILE_MODE)
    try:
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return
    os.ftruncate(held, 0)
    os.write(held, f"{os.getpid()} {procs.start_time(os.getpid())}".encode())

    forkserver.prepare()
    folder = socket_file.parent
    try:
        listener = _listen(socket_file)
        with listener:
            _serve(listener, held, idle_seconds(IDLE_ENV, DEFAULT_IDLE_SECONDS), StarterWatch(holders_dir(lock)))
    finally:
        if private(folder):
            shutil.rmtree(folder, ignore_errors=True)


def _listen(socket_file: Path) -> socket.socket:
    folder = socket_file.parent
    with contextlib.suppress(FileExistsError):
        folder.mkdir(mode=0o700)
    if not private(folder):
        raise SystemExit(f"{folder} is not this user's alone (mode 0700): not listening there")
    socket_file.unlink(missing_ok=True)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(socket_file))
    listener.listen(16)
    return listener


def _serve(listener: socket.socket, lock: int, idle: float, starter: StarterWatch) -> None:
    """Fork what each caller asks for until idle for ``idle`` seconds with none of its children left, or none is left
    once the Jupyter server that started it has exited and nothing else holds it."""
    children: set[int] = set()
    last = time.monotonic()
    while children or (time.monotonic() - last < idle and not starter.should_stop()):
        if select.select([listener], [], [], 1.0)[0]:
            with contextlib.suppress(OSError):  # a caller that went away meanwhile
                connection, _ = listener.accept()
                with connection:
                    children.add(_fork(listener, lock, connection) or 0)
        children.discard(0)
        with contextlib.suppress(ChildProcessError):
            while (ended := os.waitpid(-1, os.WNOHANG)[0]) > 0:
                children.discard(ended)
        if children:
            last = time.monotonic()
        starter.say_kept()


def _fork(listener: socket.socket, lock: int, connection: socket.socket) -> int | None:
    """Fork what the caller at ``connection`` (this user's only) asks for: a fork server (its request and event pipes
    come with the request) or a job's supervisor (its log comes with it); the child's PID. The child keeps neither the
    listener nor the lock (the zygote's alone: a next zygote can take it while its children live on)."""
    pid, uid, _ = peer(connection)
    if uid != os.getuid():
        return None
    owner = (pid, procs.start_time(pid))
    connection.settimeout(10.0)
    fds: list[int] = []
    try:
        data, fds, _, _ = socket.recv_fds(connection, 1 << 16, 2)
        while not data.endswith(b"\n") and (more := connection.recv(1 << 16)):
            data += more
        request = json.loads(data)
    except (OSError, ValueError):
        request = None
    supervisor = isinstance(request, dict) and request.get("kind") == "supervisor"
    if request is None or len(fds) != (1 if supervisor else 2):
        for fd in fds:
            os.close(fd)
        return None
    if supervisor and request.get("ray"):
        _import_ray()
    child = os.fork()
    if child == 0:
        code = 1
        try:
            listener.close()
            connection.close()
            os.close(lock)
            code = _become_supervisor(request, *fds) if supervisor else _become_fork_server(request, *fds, owner)
        finally:
            os._exit(code)
    for fd in fds:
        os.close(fd)
    connection.sendall(f"ok {child}".encode())
    return child


def _import_ray() -> None:
    """Import Ray here once, for the first supervisor that drives Ray nodes: the next ones join the cluster at once
    (about 1.5 s of CPU less each). Nothing of Ray runs here: each forked supervisor connects on its own."""
    with contextlib.suppress(ImportError):  # the supervisor says that Ray is missing
        import ray  # noqa: F401


def _become_supervisor(request: dict, log: int) -> int:
    """In a forked child: a job's supervisor, detached as one started cold is (a session of its own, its log, the
    submitter's environment, folder and umask)."""
    os.setsid()
    procs.set_name("air-supervisor")  # not the zygote's name: ps and top tell them apart
    for target in (1, 2):
        os.dup2(log, target)
    os.close(log)
    _caller_environment(request)
    os.umask(request["umask"])
    try:
        process.main([request["job_run_id"]])
    except SystemExit as end:
        return end.code if isinstance(end.code, int) else 1
    finally:  # the child ends with os._exit (the zygote's own clean-up is not its): its output is written first
        sys.stdout.flush()
        sys.stderr.flush()
    return 0


def _caller_environment(request: dict) -> None:
    os.environ.clear()
    os.environ.update(request["env"])
    with contextlib.suppress(OSError):
        os.chdir(request["cwd"])


def _become_fork_server(request: dict, requests: int, events: int, owner: tuple[int, float | None]) -> int:
    """In a forked child: the caller's environment and folder, its pipes, and the fork server's loop."""
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    procs.work_for(owner[0])  # the GPU panel and a run's energy count its calls' processes as the kernel's
    folder = request["folder"]
    out = os.open(os.path.join(folder, "forkserver.log"), os.O_WRONLY | os.O_CREAT | os.O_APPEND, FILE_MODE)
    for target in (1, 2):
        os.dup2(out, target)
    os.dup2(requests, 0)
    for fd in (out, requests):
        os.close(fd)
    _caller_environment(request)
    try:
        forkserver.serve(sys.stdin.buffer, os.fdopen(events, "w"), lambda: procs.is_alive(*owner))
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return 0
