"""This process's side of its fork server (:mod:`~jupyter_air.training.forkserver`): start it, ask it, hear it.

One fork server per process (a kernel, a script, a node's actor), started in the background when a
``@distributed`` function is defined and restarted if it died. A kernel's (and a remote call's supervisor's) is forked
by AIR_HOME's resident zygote (:mod:`~jupyter_air.training.zygote_client`), which imported torch once for every kernel;
any other process starts its own (so does a kernel when no zygote can serve). Requests go down one pipe, events come
back on another and are read by one thread; the pipes are private to the two processes, so nothing listens.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import signal
import subprocess
import sys
import threading
from concurrent.futures import Future
from pathlib import Path

from jupyter_air import scratch
from jupyter_air.jupyter_kernel import in_jupyter_kernel
from jupyter_air.training import zygote_client
from jupyter_air.training.errors import DistributedError

_INSTALL_HINT = (
    "`.distributed()` needs PyTorch: install it with `pip install 'jupyter-air[distributed]'` "
    "(or `pip install torch`) in this kernel's environment, then restart the kernel."
)
#: Seconds a request to the fork server may take to be answered once it is ready.
_ANSWER_SECONDS = 30.0


class CallEvents:
    """What the fork server says about one call: started (its PID) and ended (its exit code)."""

    def __init__(self):
        self.started: Future = Future()
        self.ended = threading.Event()
        self.code: int | None = None


class Launcher:
    """A running fork server and the calls it runs for this process."""

    _current: Launcher | None = None
    _lock = threading.Lock()
    #: True where this process's fork server is forked by AIR_HOME's zygote though it is no kernel: a job's
    #: supervisor running a remote call (its ranks then start without waiting for torch to import).
    from_zygote = False

    def __init__(self, resident: bool = False):
        scratch.sweep()  # what fork servers and calls of this user that were killed left behind
        self.folder = scratch.make("air-launcher-")  # mode 0700: its log, gone when it ends
        self.process: subprocess.Popen | None = None
        pipes = zygote_client.fork_server(self.folder, zygote_client.READY_SECONDS) if resident else None
        if pipes is not None:
            self.requests, self.events = os.fdopen(pipes[0], "wb"), os.fdopen(pipes[1], "rb")
        else:
            self.process = self._start()
            self.requests, self.events = self.process.stdin, self.process.stdout
        self.pid: int | None = self.process.pid if self.process else None  # a forked one's comes with ``ready``
        self.ended = threading.Event()
        self.ready: Future = Future()
        self._calls: dict[str, CallEvents] = {}
        self._answers: dict[int, Future] = {}
        self._requests = itertools.count()
        self._write_lock = threading.Lock()
        threading.Thread(target=self._read_events, name="air-launcher-events", daemon=True).start()

    def _start(self) -> subprocess.Popen:
        """A fork server of this process's own (it imports torch itself)."""
        package_parent = str(Path(__file__).resolve().parents[2])
        code = (
            "import sys; sys.path.insert(0, sys.argv.pop(1)); from jupyter_air.training.forkserver import main; main()"
        )
        with open(os.open(self.folder / "forkserver.log", os.O_WRONLY | os.O_CREAT, 0o600), "wb") as log:
            return subprocess.Popen(
                [sys.executable, "-c", code, package_parent, str(self.folder)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=log,
            )

    @classmethod
    def get(cls) -> Launcher:
        """This process's fork server, started now unless one runs: a kernel's is forked by AIR_HOME's zygote."""
        if _find_torch() is None:
            raise DistributedError(_INSTALL_HINT)
        with cls._lock:
            if cls._current is None or cls._current.ended.is_set():
                cls._current = cls(resident=cls.from_zygote or in_jupyter_kernel())
            return cls._current

    @classmethod
    def close(cls, timeout: float = 30.0) -> None:
        """End this process's fork server now (a job's supervisor, before it exits): it stops what still runs."""
        with cls._lock:
            current, cls._current = cls._current, None
        if current is None:
            return
        current.requests.close()  # the fork server ends at end of input
        if not current.ended.wait(timeout) and current.pid is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(current.pid, signal.SIGKILL)
            current.ended.wait()

    def info(self) -> dict:
        """The ready fork server's facts (``cuda_devices``: GPUs the ranks see), waiting for it if needed."""
        try:
            info = self.ready.result(zygote_client.READY_SECONDS)
        except TimeoutError:
            raise DistributedError(
                f"the fork server did not start within {zygote_client.READY_SECONDS:g} s; its log is "
                f"{self.folder / 'forkserver.log'}"
            ) from None
        if "message" in info:
            raise DistributedError(f"the fork server could not import PyTorch: {info['message']}. {_INSTALL_HINT}")
        return info

    def launch(self, call_id: str, folder: Path, place: dict, reserved_port: int | None = None) -> CallEvents:
        """Start a call process for the call in ``folder``; its events (the PID arrives with ``started``)."""
        self.info()
        events = self._calls[call_id] = CallEvents()
        request = {"op": "launch", "id": call_id, "folder": str(folder), "place": place}
        self._send({**request, "reserved_port": reserved_port})
        return events

    def stop(self, call_id: str) -> None:
        """Ask the call's process to stop every process of the call (it reports ``ended`` once done)."""
        self._send({"op": "stop", "id": call_id})

    def reserve(self, host: str) -> int:
        """A listener on ``host``, kept in the fork server for the next launch's rendezvous store; its port."""
        self.info()
        number = next(self._requests)
        answer = self._answers[number] = Future()
        self._send({"op": "reserve", "host": host, "request": number})
        reply = answer.result(_ANSWER_SECONDS)
        if "error" in reply:
            raise DistributedError(f"cannot listen on {host} for the call's rendezvous: {reply['error']}")
        return int(reply["port"])

    def unreserve(self, port: int) -> None:
        self._send({"op": "unreserve", "port": port})

    def forget(self, call_id: str) -> None:
        self._calls.pop(call_id, None)

    def _send(self, request: dict) -> None:
        with self._write_lock:
            try:
                self.requests.write(json.dumps(request).encode() + b"\n")
                self.requests.flush()
            except (BrokenPipeError, ValueError):
                raise DistributedError(self._gone()) from None

    def _gone(self) -> str:
        code = f" with code {self.process.poll()}" if self.process else ""
        return (
            f"the fork server (PID {self.pid}) ended{code}; its log is {self.folder / 'forkserver.log'}. "
            "The next call starts a new one."
        )

    def _read_events(self) -> None:
        for line in self.events:
            event = json.loads(line)
            kind = event.pop("event")
            if kind in ("ready", "failed"):
                self.pid = event.get("pid", self.pid)
                self.ready.set_result(event)
            elif kind == "reserved":
                self._answers.pop(event["request"]).set_result(event)
            elif kind == "started" and event["id"] in self._calls:
                self._calls[event["id"]].started.set_result((event["pid"], event["started"]))
            elif kind == "ended" and event["id"] in self._calls:
                calls = self._calls[event["id"]]
                calls.code = event["code"]
                calls.ended.set()
        if self.process:
            self.process.wait()
        self.ended.set()
        if not self.ready.done():  # it died before saying anything
            self.ready.set_result({"message": self._gone()})
        for events in self._calls.values():  # its calls died with it (their own processes stop themselves)
            if not events.started.done():
                events.started.set_exception(DistributedError(self._gone()))
            events.ended.set()


def _find_torch():
    """torch's import spec without importing it (None when it is not installed)."""
    import importlib.util

    return importlib.util.find_spec("torch")
