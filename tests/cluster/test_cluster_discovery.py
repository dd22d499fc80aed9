"""``auto`` is resolved only from this user's own raylets and Ray record: the audit's steps (another local user's
fake raylet in ``ps`` and rewritten ``ray_current_cluster``) get a clear refusal, and their listener gets nothing."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil
import pytest

from jupyter_air.cluster.connect import connect, resolve
from jupyter_air.cluster.discovery import Untrusted, auto_address, read_private
from jupyter_air.cluster.errors import ClusterUnreachable

NOBODY = [shutil.which("runuser") or "/usr/sbin/runuser", "-u", "nobody", "--"]
ATTACKER = "127.0.0.5"
NO_SECRETS = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"}  # what nobody's processes get of the environment
#: What ``nobody`` runs: a gRPC server on 127.0.0.5 that prints its port, then the method and metadata (a token
#: included) of every call it receives, one JSON line each.
LISTENER = r"""
import json, sys
from concurrent import futures
sys.path.append(sys.argv[1])  # grpc from the project's environment (world-readable)
import grpc


class Record(grpc.GenericRpcHandler):
    def service(self, details):
        print(json.dumps({"method": details.method, "metadata": dict(details.invocation_metadata)}), flush=True)


server = grpc.server(futures.ThreadPoolExecutor(2), handlers=[Record()])
port = server.add_insecure_port("127.0.0.5:0")
server.start()
print(port, flush=True)
server.wait_for_termination()
"""


class Processes:
    """Processes a test starts (as this user or as ``nobody``), all killed at its end."""

    def __init__(self):
        self.started: list[subprocess.Popen] = []

    def start(self, argv: list[str], **options) -> subprocess.Popen:
        proc = subprocess.Popen(argv, start_new_session=True, **options)
        self.started.append(proc)
        return proc

    def raylet(self, gcs_address: str, as_nobody: bool = False) -> int:
        """A fake raylet, as the audit made one: ``sleep`` whose argv[0] names ``gcs_address``; returns its PID."""
        line = f'exec -a "raylet --gcs-address={gcs_address}" sleep 120'
        proc = self.start([*(NOBODY if as_nobody else []), "bash", "-c", line], env=NO_SECRETS)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            with contextlib.suppress(psutil.Error):
                for found in [psutil.Process(proc.pid), *psutil.Process(proc.pid).children(recursive=True)]:
                    if found.cmdline()[:1] == [f"raylet --gcs-address={gcs_address}"]:
                        return found.pid
            time.sleep(0.05)
        raise AssertionError(f"the fake raylet for {gcs_address} did not start")

    def stop(self) -> None:
        for proc in self.started:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)


@pytest.fixture
def processes():
    started = Processes()
    yield started
    started.stop()


@pytest.fixture
def listener(processes):
    """``nobody``'s gRPC listener on 127.0.0.5: its port, and a function that stops it and returns the calls it
    received."""
    site = next(p for p in sys.path if p.endswith("site-packages") and Path(p, "grpc").is_dir())
    proc = processes.start(
        [*NOBODY, "/usr/bin/python3.11", "-c", LISTENER, site], stdout=subprocess.PIPE, text=True, env=NO_SECRETS
    )
    port = int(proc.stdout.readline())

    def received() -> list[dict]:
        os.killpg(proc.pid, signal.SIGKILL)
        return [json.loads(line) for line in proc.communicate(timeout=10)[0].splitlines()]

    return port, received


@pytest.fixture
def ray_tmpdir(monkeypatch):
    """A folder for ``RAY_TMPDIR`` in /tmp, and this process's environment without ``RAY_ADDRESS``."""
    root = Path(tempfile.mkdtemp(prefix="air-discovery-", dir="/tmp"))
    monkeypatch.setenv("RAY_TMPDIR", str(root))
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    yield root
    shutil.rmtree(root, ignore_errors=True)


def shared_record(root: Path, mine: str, theirs: str) -> None:
    """Ray's record as ``ray start`` leaves it in /tmp/ray (a folder anyone may write, no sticky bit): this user
    writes ``mine`` there, then ``nobody`` replaces the file with one naming ``theirs``."""
    root.chmod(0o755)
    (root / "ray").mkdir()
    (root / "ray").chmod(0o777)
    record = root / "ray" / "ray_current_cluster"
    record.write_text(mine)
    swap = f"printf %s {theirs} > {record}.new && mv -f {record}.new {record}"
    subprocess.run([*NOBODY, "sh", "-c", swap], check=True, timeout=30, env=NO_SECRETS)
    assert record.read_text() == theirs and record.stat().st_uid != os.geteuid()


def only_these(monkeypatch, pids: set[int]) -> None:
    """Ray's scan and ours see only the test's processes: another test session's Ray cluster on this shared machine
    (run by the same user) would otherwise change which cluster is this user's."""
    from ray._private.services import find_gcs_addresses

    every = psutil.process_iter
    monkeypatch.setattr(psutil, "process_iter", lambda *a, **k: (p for p in every(*a, **k) if p.pid in pids))
    find_gcs_addresses.cache_clear()  # Ray keeps what its scan found for the life of the process


@pytest.mark.parametrize("own", [0, 2], ids=["no-raylet-of-mine", "two-raylets-of-mine"])
def test_auto_is_refused_and_sends_nothing_when_another_user_fakes_a_raylet_and_the_record(
    processes, listener, ray_tmpdir, monkeypatch, own
):
    # Given another local user's fake raylet naming their listener on 127.0.0.5, and Ray's record rewritten by them
    port, received = listener
    pids = {processes.raylet(f"{ATTACKER}:{port}", as_nobody=True)}
    shared_record(ray_tmpdir, mine="127.0.0.1:1", theirs=f"{ATTACKER}:{port}")
    # and none, or two, raylets of this user (of clusters the record no longer names)
    pids |= {processes.raylet(f"127.0.0.1:{n}") for n in range(1, own + 1)}
    only_these(monkeypatch, pids)
    assert os.environ["RAY_AUTH_MODE"] == "token" and os.environ["RAY_AUTH_TOKEN"]  # the token to be kept

    # When this user joins 'auto'
    with pytest.raises(ClusterUnreachable) as refused:
        connect("auto")

    # Then it is refused, saying why and what to give instead
    message = str(refused.value)
    assert "1 raylet process(es) of other users were ignored" in message
    assert "give the head's address instead (host:port" in message
    if own:
        assert "several Ray clusters of yours on this machine (127.0.0.1:1, 127.0.0.1:2)" in message
        assert "ray_current_cluster belongs to another user" in message or "can be written by other users" in message
    else:
        assert "found no Ray node of yours on this machine" in message
    # and the other user's listener received no call: no token went there
    assert received() == []


def test_auto_resolves_to_the_cluster_of_this_users_own_raylet(processes, listener, ray_tmpdir, monkeypatch):
    # Given this user's raylet, and another user's fake raylet and rewritten record
    port, received = listener
    pids = {processes.raylet("127.0.0.1:6390"), processes.raylet(f"{ATTACKER}:{port}", as_nobody=True)}
    shared_record(ray_tmpdir, mine="127.0.0.1:6390", theirs=f"{ATTACKER}:{port}")
    only_these(monkeypatch, pids)

    # When 'auto' is resolved, Then it is this user's cluster
    assert resolve("auto") == "127.0.0.1:6390"
    assert received() == []


@pytest.mark.parametrize(
    ("recorded", "expected"),
    [("127.0.0.1:6392", "127.0.0.1:6392"), ("127.0.0.1:6399", "names 127.0.0.1:6399"), (None, "no record")],
    ids=["record-names-one", "record-names-none-of-them", "no-record"],
)
def test_with_several_clusters_of_mine_auto_takes_the_one_my_private_record_names(
    processes, ray_tmpdir, monkeypatch, recorded, expected
):
    # Given two raylets of this user, and Ray's record in RAY_TMPDIR of mode 0700 (its ray/ 0777, as Ray makes it)
    only_these(monkeypatch, {processes.raylet("127.0.0.1:6391"), processes.raylet("127.0.0.1:6392")})
    (ray_tmpdir / "ray").mkdir()
    (ray_tmpdir / "ray").chmod(0o777)
    if recorded:
        (ray_tmpdir / "ray" / "ray_current_cluster").write_text(recorded)

    # When 'auto' is resolved
    # Then it is the cluster the record names, when that is one of them; otherwise it is refused, saying why
    if expected == recorded:
        assert auto_address() == recorded
    else:
        with pytest.raises(ClusterUnreachable, match=f"several Ray clusters of yours.*{expected}"):
            auto_address()


def test_ray_address_in_the_environment_wins_without_a_scan(monkeypatch):
    # Given RAY_ADDRESS set, and a scan that would fail
    monkeypatch.setattr(psutil, "process_iter", None)
    # When 'auto' is resolved, Then it is RAY_ADDRESS, as for Ray
    assert auto_address({"RAY_ADDRESS": "10.0.0.7:6379"}) == "10.0.0.7:6379"


def make(root: Path, layout: str) -> Path:
    """A record at ``root/a/b`` laid out as ``layout`` says; returns its path."""
    (root / "a").mkdir()
    record = root / "a" / "b"
    modes = {"private": (0o700, 0o777), "sticky": (0o1777, 0o755), "open": (0o755, 0o777), "theirs": (0o755, 0o755)}
    if layout == "fifo":
        os.mkfifo(record)
    else:
        record.write_text("127.0.0.1:6379")
    root.chmod(modes.get(layout, (0o700, 0o700))[0])
    (root / "a").chmod(modes.get(layout, (0o700, 0o700))[1])
    if layout == "theirs":
        os.chown(record, 65534, 65534)
    return record


@pytest.mark.parametrize(
    ("layout", "refused"),
    [
        ("private", None),  # a 0777 folder inside a 0700 one: no one else can reach it
        ("sticky", None),  # as /tmp: others may add entries but not replace this user's
        ("open", "a can be written by other users (mode 777)"),
        ("theirs", "b belongs to another user (uid 65534)"),
        ("fifo", "b is not a regular file"),
    ],
    ids=["private", "sticky", "open", "theirs", "fifo"],
)
def test_a_record_is_read_only_when_no_other_user_can_have_written_it(ray_tmpdir, layout, refused):
    # Given Ray's record laid out so
    record = make(ray_tmpdir, layout)

    # When it is read, Then it is, or it is refused naming the file or folder and why
    if refused is None:
        assert read_private(record) == "127.0.0.1:6379"
    else:
        with pytest.raises(Untrusted, match=re.escape(refused)):
            read_private(record)
