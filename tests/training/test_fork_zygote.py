"""AIR_HOME's fork server zygote: a kernel's fork server is forked from it (torch imported once for every kernel),
it serves each kernel as its own fork server would, it is this user's alone, and it stops when idle."""

from __future__ import annotations

import asyncio
import json
import os
import pathlib
import subprocess
import sys

import nbformat
import psutil
import pytest
from nbclient import NotebookClient
from resident_servers import until

from jupyter_air.training import zygote_client

REPO = pathlib.Path(__file__).resolve().parents[2]

CALL = """
import json, os, sys
import psutil
from jupyter_air import distributed
from jupyter_air.training.forkserver_client import Launcher

@distributed(gpus=2, experiment="zygote")
def where(kernel):
    import os, psutil
    from jupyter_air.gpu.attribution import kernel_of
    return os.getcwd(), kernel_of(os.getpid(), {kernel: "this kernel"}), psutil.Process().name()

results = where.distributed(os.getpid())
fork_server = Launcher._current
server = psutil.Process(fork_server.pid)
from jupyter_air.gpu.attribution import kernel_of
print(json.dumps({"results": [r[0] for r in results], "names": [r[2] for r in results],
    "counted": [kernel_of(server.pid, {os.getpid(): "this kernel"}), *(r[1] for r in results)],
    "pid": server.pid, "parent": server.ppid(), "server_cwd": server.cwd(),
    "own": fork_server.process is not None, "folder": str(fork_server.folder), "cwd": os.getcwd(),
    "held": [m for m in ("torch", "mlflow") if m in sys.modules]}))
"""


def kernel_call(folder: pathlib.Path) -> dict:
    """What a real kernel's first call saw (its folder ``folder``), once the kernel has shut down."""
    folder.mkdir()
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(CALL)])
    client = NotebookClient(nb, timeout=180, kernel_name="python3", resources={"metadata": {"path": str(folder)}})
    client.execute()
    (out,) = [o for o in nb.cells[0].outputs if o.output_type == "stream"]
    return json.loads(out.text)


@pytest.fixture
def kernels_env(store, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))


def only_zygote(home: pathlib.Path) -> tuple[pathlib.Path, int]:
    (lock,) = [lock for lock in home.glob("forks-*.pid") if zygote_client.holder(lock)]
    return lock, zygote_client.holder(lock)[0]


def zygote_lock(home: pathlib.Path, pid: int) -> pathlib.Path:
    """The lock in ``home`` of the zygote ``pid`` (other tests' kernels, of other environments, may keep others)."""
    (lock,) = [lock for lock in home.glob("forks-*.pid") if (zygote_client.holder(lock) or (0,))[0] == pid]
    return lock


@pytest.mark.usefixtures("kernels_env", "no_orphans")
def test_kernels_fork_their_fork_servers_from_one_private_zygote(air_home, tmp_path):
    # Given a first kernel's first call on this AIR_HOME
    first = kernel_call(tmp_path / "a")
    zygote_pid = first["parent"]
    lock = zygote_lock(air_home, zygote_pid)

    # Then it ran in the kernel's folder, from a fork server the zygote forked, and the kernel never imported torch
    assert first["results"] == [str(tmp_path / "a")] * 2 and first["server_cwd"] == str(tmp_path / "a")
    assert first["parent"] == zygote_pid and not first["own"] and "torch" not in first["held"]
    # And the fork server and the ranks count as the kernel's (the GPU panel, a run's energy), the ranks named as
    # Python processes
    assert first["counted"] == ["this kernel"] * 3
    assert first["names"] == [pathlib.Path(sys.executable).name] * 2
    # And that fork server ended with its kernel, deleting its log's folder; the zygote stays for the next kernel
    until(lambda: not psutil.pid_exists(first["pid"]), timeout=20)
    assert not pathlib.Path(first["folder"]).exists()
    assert psutil.Process(zygote_pid).is_running()

    # When a second kernel, in another folder, makes its first call
    second = kernel_call(tmp_path / "b")

    # Then the same zygote forked its fork server, which worked in that kernel's folder
    assert zygote_lock(air_home, zygote_pid) == lock
    assert second["results"] == [str(tmp_path / "b")] * 2 and second["server_cwd"] == str(tmp_path / "b")
    assert second["parent"] == zygote_pid and not second["own"] and second["counted"] == ["this kernel"] * 3
    # And the zygote is private: its lock 0600 in AIR_HOME, its socket in a 0700 folder of this user
    socket = zygote_client.socket_path(lock.name.removeprefix("forks-").removesuffix(".pid"))
    assert lock.stat().st_mode & 0o777 == 0o600 and socket.parent.stat().st_mode & 0o777 == 0o700
    assert " ".join(psutil.Process(zygote_pid).cmdline()).endswith(f"{socket} {lock}")


NOBODY = """
import socket, sys
attempt = socket.socket(socket.AF_UNIX)
try:
    attempt.connect(sys.argv[1])
    print("connected")
except OSError as exc:
    print(type(exc).__name__)
try:
    open(sys.argv[2]).read()
    print("read")
except OSError as exc:
    print(type(exc).__name__)
"""


@pytest.mark.usefixtures("no_orphans")
def test_another_user_cannot_reach_the_zygote_and_it_stops_when_idle(store, air_home, tmp_path, monkeypatch):
    from jupyter_air.training.forkserver_client import Launcher

    # Given a zygote that stops after 2 idle seconds, serving a fork server of this process
    monkeypatch.setenv("AIR_HOME", str(tmp_path / "home"))
    monkeypatch.setenv(zygote_client.IDLE_ENV, "2")
    launcher = Launcher(resident=True)
    assert launcher.process is None and "cuda_devices" in launcher.info()
    lock, pid = only_zygote(tmp_path / "home")
    socket = zygote_client.socket_path(lock.name.removeprefix("forks-").removesuffix(".pid"))

    # When another local user tries its socket and its lock
    tried = subprocess.run(
        ["runuser", "-u", "nobody", "--", "/usr/bin/python3.11", "-c", NOBODY, str(socket), str(lock)],
        capture_output=True,
        text=True,
        cwd="/",
        check=True,
    )
    # Then both are refused
    assert tried.stdout.split() == ["PermissionError", "PermissionError"]

    # And while a fork server lives the zygote stays; once it ended, the zygote stops and removes its folder
    launcher.requests.close()
    assert launcher.ended.wait(20)
    until(lambda: not psutil.pid_exists(pid), timeout=20)
    assert not socket.parent.exists() and zygote_client.holder(lock) is None


def test_a_zygote_folder_that_is_not_private_is_never_used(store, tmp_path, monkeypatch):
    from jupyter_air.training.forkserver_client import Launcher

    # Given the zygote's socket folder made by someone else first, open to everyone
    monkeypatch.setenv("AIR_HOME", str(tmp_path / "home"))
    (tmp_path / "home").mkdir(mode=0o700)
    folder = zygote_client.socket_path(zygote_client.key()).parent
    folder.mkdir(mode=0o777)
    folder.chmod(0o777)
    try:
        # When a kernel's fork server is asked for
        launcher = Launcher(resident=True)
        # Then it starts one of its own, which works, and no zygote was started
        assert launcher.process is not None and "cuda_devices" in launcher.info()
        assert not list((tmp_path / "home").glob("forks-*.pid"))
        launcher.requests.close()
        assert launcher.ended.wait(30)
    finally:
        folder.rmdir()


def test_kernels_whose_torch_would_load_differently_use_different_zygotes(store, monkeypatch):
    # Given a kernel's zygote key, When a variable read as torch loads differs, Then so does the key; not otherwise
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    base = zygote_client.key()
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    assert zygote_client.key() != base
    monkeypatch.delenv("OMP_NUM_THREADS")
    monkeypatch.setenv("AIR_TEST_UNRELATED", "1")
    assert zygote_client.key() == base


@pytest.fixture
def jp_server_config(store, kernels_env, tmp_path, monkeypatch):
    """A server with an AIR_HOME of its own that starts AIR_HOME's zygote when it starts (the default)."""
    monkeypatch.setenv("AIR_HOME", str(tmp_path / "home"))
    air = {"gpu_source": "none", "mlflow_ui_autostart": False, "job_check_interval_seconds": 0}
    return {"ServerApp": {"jpserver_extensions": {"jupyter_air": True}}, "JupyterAir": air}


async def test_the_server_starts_the_zygote_its_kernels_first_calls_fork_from(jp_fetch, jp_serverapp, tmp_path):
    home = tmp_path / "home"

    # Given a server that has just started, with no kernel yet: AIR_HOME's zygote comes up
    def held() -> list:
        return [lock for lock in home.glob("forks-*.pid") if zygote_client.holder(lock)]

    await asyncio.to_thread(until, held, 120)
    lock, started = only_zygote(home)
    body = json.dumps({"path": "a.ipynb", "type": "notebook", "name": "a.ipynb", "kernel": {"name": "python3"}})
    session = json.loads((await jp_fetch("api", "sessions", method="POST", body=body)).body)
    client = jp_serverapp.kernel_manager.get_kernel(session["kernel"]["id"]).client()
    client.start_channels()
    try:
        # When a kernel of that server runs its first call
        await client.wait_for_ready(timeout=120)
        printed = []
        reply = await client.execute_interactive(
            CALL, timeout=300, output_hook=lambda m: printed.append(m["content"].get("text", ""))
        )
        assert reply["content"]["status"] == "ok", printed
        seen = json.loads("".join(printed).strip().splitlines()[-1])  # the call's own lines come before
        # Then its fork server was forked from the zygote the server started, and no other zygote was needed
        assert (seen["parent"], seen["own"], "torch" in seen["held"]) == (started, False, False)
        assert only_zygote(home) == (lock, started)
    finally:
        client.stop_channels()
        await jp_fetch("api", "sessions", session["id"], method="DELETE")
        zygote_client.stop(lock)
