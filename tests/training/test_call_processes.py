"""A call's processes: a daemon that clears its environment is still stopped, a killed caller takes its calls with
it, the folders of a call killed with its fork server go with the user's next call, and a failed or stopped call
leaves no listener or thread behind in the caller."""

from __future__ import annotations

import contextlib
import os
import pathlib
import signal
import subprocess
import sys
import tempfile
import threading
import time

import psutil
import pytest

from jupyter_air import DistributedError, distributed
from jupyter_air.tracking.stops import request_stop
from jupyter_air.training.errors import CallStopped, DistributedTimeout

pytestmark = pytest.mark.usefixtures("no_orphans")

REPO = pathlib.Path(__file__).resolve().parents[2]

#: A daemon that leaves the session, clears its environment (no AIR_* marker left), forks again so its parent
#: can exit (it is re-parented: no rank is its ancestor any more) and ignores SIGTERM.
HIDDEN_DAEMON = (
    "import os, signal, sys, time; signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
    "if os.fork(): os._exit(0)\n"
    "open(sys.argv[1], 'w').write(str(os.getpid())); time.sleep(600)"
)


def start_hidden_daemon_then_hang(folder):
    import subprocess
    import sys
    import time

    if os.environ["RANK"] == "0":
        pid_file = os.path.join(folder, "daemon.pid")
        subprocess.Popen(["setsid", "env", "-i", sys.executable, "-c", HIDDEN_DAEMON, pid_file])
    pathlib.Path(folder, f"rank{os.environ['RANK']}.pid").write_text(str(os.getpid()))
    time.sleep(600)


def wait_for(paths: list[pathlib.Path], seconds: float = 120) -> None:
    deadline = time.monotonic() + seconds
    while not all(p.exists() and p.read_text() for p in paths):
        assert time.monotonic() < deadline, f"never written: {[str(p) for p in paths if not p.exists()]}"
        time.sleep(0.05)


def gone(pid: int, seconds: float = 15) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
            return True
        time.sleep(0.1)
    return False


def stop_by(how: str, folder: pathlib.Path, air_home: pathlib.Path) -> None:
    """Once the ranks and the daemon run: interrupt this process, or send the run's Stop request."""
    asked = time.time()
    wait_for([folder / "daemon.pid", folder / "rank0.pid", folder / "rank1.pid"])
    if how == "interrupt":
        os.kill(os.getpid(), signal.SIGINT)
    else:  # the run registered since this thread started (an interrupted test may have left another)
        (owner,) = [p for p in (air_home / "live-runs").glob("*.pid") if p.stat().st_mtime >= asked - 1]
        assert request_stop(owner.name.removesuffix(".pid"), air_home)


@pytest.mark.parametrize(
    ("how", "raised"),
    [("timeout", DistributedTimeout), ("interrupt", KeyboardInterrupt), ("stop", CallStopped)],
)
def test_a_daemon_that_clears_its_environment_is_stopped_with_the_call(store, air_home, tmp_path, how, raised):
    # Given a rank that starts a daemon in a session of its own, with an empty environment, ignoring SIGTERM
    call = distributed(start_hidden_daemon_then_hang, gpus=2, experiment=f"hidden-daemon-{how}", timeout=120)
    if how == "timeout":
        call = distributed(start_hidden_daemon_then_hang, gpus=2, experiment="hidden-daemon-timeout", timeout=8)
    else:
        threading.Thread(target=stop_by, args=(how, tmp_path, air_home), daemon=True).start()

    # When the call is stopped by its timeout, an interrupt or its Stop button
    with pytest.raises(raised):
        call.distributed(str(tmp_path))

    # Then the daemon was stopped too, although nothing marks it as the call's
    daemon = int((tmp_path / "daemon.pid").read_text())
    assert gone(daemon, seconds=1), f"the daemon {daemon} outlived the call"


CALLER = """
import sys
sys.path.insert(0, {repo!r})
from jupyter_air import distributed
from tests.training.test_call_processes import start_hidden_daemon_then_hang
distributed(start_hidden_daemon_then_hang, gpus=2, experiment="killed-caller").distributed({folder!r})
"""


def test_a_killed_caller_takes_every_process_of_its_call_with_it(store, tmp_path):
    from fork_servers import fork_server_tree  # here: the caller imports this module, without the tests' path

    # Given a process (a kernel, say) running a call whose rank started a hidden daemon
    temp = pathlib.Path(tempfile.gettempdir())
    before = set(temp.glob("air-call-*"))
    caller = subprocess.Popen([sys.executable, "-c", CALLER.format(repo=str(REPO), folder=str(tmp_path))])
    try:
        wait_for([tmp_path / "daemon.pid", tmp_path / "rank0.pid", tmp_path / "rank1.pid"])
        calls = {f for f in set(temp.glob("air-call-*")) - before if _carries(f, tmp_path)}  # the call's folder
        log, below = fork_server_tree(caller.pid)
        assert len(below) >= 4 and log.is_dir()  # the fork server, the call's process, two ranks

        # When the caller is killed as the OOM killer does (SIGKILL: it cleans up nothing)
        caller.kill()
        caller.wait()
    finally:
        if caller.poll() is None:
            caller.kill()

    # Then the fork server, the call's process, its ranks and the daemon all end within seconds
    daemon = int((tmp_path / "daemon.pid").read_text())
    left = [pid for pid in [*below, daemon] if not gone(pid, seconds=20)]
    assert left == [], f"left running: {[psutil.Process(p).cmdline() for p in left]}"
    # and the fork server took its log's folder and the call's folder with it
    assert not log.exists()
    assert calls and not any(folder.exists() for folder in calls), calls


def _carries(call_folder: pathlib.Path, argument: pathlib.Path) -> bool:
    """Whether a call's folder is this test's call (its payload holds the test's folder), not another test's."""
    try:
        return str(argument).encode() in (call_folder / "payload.pkl").read_bytes()
    except OSError:
        return False


def write_pid_then_hang(folder):
    pathlib.Path(folder, f"rank{os.environ['RANK']}.pid").write_text(str(os.getpid()))
    time.sleep(600)


def rank():
    return int(os.environ["RANK"])


CALLERS = {
    "hanging": "distributed(write_pid_then_hang, gpus=2, experiment='killed-call').distributed({folder!r})",
    "quick": "print(distributed(rank, gpus=2, experiment='next-call').distributed())",
}


def test_folders_left_by_a_call_killed_with_its_fork_server_go_with_this_users_next_call(store, tmp_path):
    from fork_servers import fork_server_tree

    temp = tmp_path / "tmp"  # the callers' temporary folder: no other test's call makes or sweeps folders there
    temp.mkdir()
    environment = {**os.environ, "TMPDIR": str(temp)}

    def caller(kind: str) -> list[str]:
        code = f"import sys; sys.path.insert(0, {str(REPO)!r}); from jupyter_air import distributed\n"
        code += f"from tests.training.test_call_processes import rank, write_pid_then_hang\n{CALLERS[kind]}"
        return [sys.executable, "-c", code.format(folder=str(tmp_path))]

    # Given a caller whose call runs, killed with its fork server and every process of the call (SIGKILL, as the
    # out-of-memory killer does: nobody cleans up)
    before = set(temp.glob("air-call-*"))
    hanging = subprocess.Popen(caller("hanging"), env=environment)
    try:
        wait_for([tmp_path / "rank0.pid", tmp_path / "rank1.pid"])
        calls = set(temp.glob("air-call-*")) - before
        log, below = fork_server_tree(hanging.pid)
    finally:
        hanging.kill()
        hanging.wait()
    for pid in below:
        with contextlib.suppress(psutil.Error):
            psutil.Process(pid).kill()
    assert all(gone(pid) for pid in below)
    assert calls and log.is_dir() and all(folder.is_dir() for folder in calls)  # left behind

    # When the same user's next call starts its fork server
    done = subprocess.run(caller("quick"), capture_output=True, text=True, timeout=300, check=True, env=environment)

    # Then it ran, and the folders the killed ones left are gone
    assert done.stdout.splitlines()[-1] == "[0, 1]"
    assert not log.exists() and not any(folder.exists() for folder in calls)


def fail_at_once():
    import torch.distributed as dist

    dist.init_process_group("gloo")
    dist.barrier()  # both ranks past the group's set-up: neither sees the other's exit as a connection error
    raise RuntimeError("boom")


def threads_and_listeners() -> tuple[set[str], set]:
    me = psutil.Process()
    threads = {t.name for t in threading.enumerate()}
    return threads, {c.laddr for c in me.net_connections("inet") if c.status == psutil.CONN_LISTEN}


def test_a_failed_or_stopped_call_leaves_no_listener_or_thread_in_the_caller(store, air_home, tmp_path):
    # Given a caller that already ran one call (its fork server and event reader are there to stay)
    distributed(lambda: 1, gpus=2, experiment="leaks").distributed()
    before = threads_and_listeners()

    # When a call fails, and another one is stopped
    with pytest.raises(DistributedError, match="boom"):
        distributed(fail_at_once, gpus=2, experiment="leaks").distributed()
    threading.Thread(target=stop_by, args=("stop", tmp_path, air_home), daemon=True).start()
    with pytest.raises(CallStopped):
        distributed(start_hidden_daemon_then_hang, gpus=2, experiment="leaks", timeout=120).distributed(str(tmp_path))

    # Then the caller holds exactly the threads and listening sockets it had before
    threads, listeners = threads_and_listeners()
    assert threads - before[0] <= {"stop-by"} and listeners == before[1] == set()
