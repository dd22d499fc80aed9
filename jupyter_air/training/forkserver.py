"""``python -m jupyter_air.training.forkserver``: runs a kernel's calls, so the kernel itself never imports torch.

It imports torch and PyTorch's elastic launcher once (or finds them imported, when AIR_HOME's zygote forked it:
:mod:`~jupyter_air.training.zygote_client`), never touches CUDA (it counts GPUs through NVML), and reads one JSON
request per line on stdin, answering events on its event pipe (:mod:`~jupyter_air.training.forkserver_client` is the
other side). Each call is a process forked from it (:mod:`~jupyter_air.training.elastic_call`) that runs the
elastic agent; the ranks fork from that one. The fork server is a child subreaper: what a dead call process
left behind becomes its child, and it kills it. It ends, stopping every call, when its owner goes away (stdin
closes, or the owner's process ends).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import select
import shutil
import signal
import sys
import time

from jupyter_air import procs
from jupyter_air.training import elastic_call, rendezvous

#: Seconds between two looks for ended calls and for the owner while calls run (or what they left is being stopped);
#: between two looks for the owner while none runs (a request wakes the loop at once); between two looks for
#: processes left to this subreaper (a call's daemon whose parent ended later) while none runs. Idle, a fork server
#: then costs 0.26 CPU-seconds a minute instead of 1.34 (a look for those processes reads every process's entry in
#: /proc: the one cost left).
_TICK_SECONDS, _IDLE_TICK_SECONDS, _IDLE_SCAN_SECONDS = 0.1, 1.0, 5.0
#: Seconds a call process gets to end after its SIGTERM (its own stop of the ranks takes ``TERM_GRACE_SECONDS``)
#: before it is killed: a launcher blocked in PyTorch's code (its exit barrier waits up to 300 s for the nodes of a
#: multi-node call that failed elsewhere) runs no Python signal handler until that code returns.
_CALL_STOP_SECONDS = procs.TERM_GRACE_SECONDS + 2.0
#: Loggers of the elastic launcher: their INFO lines would only repeat what the run card shows.
_LAUNCHER_LOGGERS = ("torch.distributed.elastic", "torch.distributed.launcher", "torch.multiprocessing", "torchelastic")


class Server:
    """The fork server's state: its calls by PID, the reserved rendezvous listeners, the event stream."""

    def __init__(self, events, owner_alive):
        self.events = events
        self.owner_alive = owner_alive
        self.calls: dict[int, str] = {}
        #: The folders of the calls it launched, deleted when it ends (their owner has cleaned up, or is gone).
        self.folders: list[str] = []
        self._kill_at: dict[int, float] = {}  # call process -> monotonic time of its SIGKILL, once asked to stop
        self._orphans = False  # the last look found processes left to this subreaper
        self._next_scan = 0.0  # monotonic time of the next look for them while no call runs

    def tick(self) -> float:
        """Seconds until the next look: short while calls run or left processes are being stopped."""
        return _TICK_SECONDS if self.calls or self._orphans else _IDLE_TICK_SECONDS

    def emit(self, event: dict) -> None:
        """Tell the owner; nothing when it is gone (its end of the pipe closed: the shutdown goes on)."""
        with contextlib.suppress(BrokenPipeError, ValueError):  # ValueError: the stream was closed after one
            self.events.write(json.dumps(event) + "\n")
            self.events.flush()

    def handle(self, request: dict) -> None:
        op = request.get("op")
        if op == "launch":
            self.launch(request)
        elif op == "stop":
            self.stop(request["id"])
        elif op == "reserve":
            try:
                answer = {"port": rendezvous.reserve(request["host"])}
            except OSError as exc:
                answer = {"error": str(exc)}
            self.emit({"event": "reserved", "request": request["request"], **answer})
        elif op == "unreserve":
            rendezvous.unreserve(request["port"])

    def launch(self, request: dict) -> None:
        me = os.getpid()
        pid = os.fork()
        if pid == 0:  # the call process: it never returns to this loop
            code = 1
            try:
                procs.die_with_parent(me, signal.SIGTERM)
                self._leave_the_server(request.get("reserved_port"))
                code = elastic_call.run(request)
            finally:
                os._exit(code)
        self.calls[pid] = request["id"]
        self.folders.append(request["folder"])
        port = request.get("reserved_port")
        if port is not None:
            rendezvous.unreserve(port)  # the call process has its own copy of the listener
        self.emit({"event": "started", "id": request["id"], "pid": pid, "started": procs.start_time(pid)})

    def _leave_the_server(self, port: int | None) -> None:
        """In a new call process: close the server's pipes (so its owner sees them close with the server) and
        every reserved listener but its own."""
        self.events.close()
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.close(null)
        for other in [p for p in rendezvous.reserved_ports() if p != port]:
            rendezvous.unreserve(other)

    def stop(self, call_id: str) -> None:
        """SIGTERM to the call's process; SIGKILL once ``_CALL_STOP_SECONDS`` later it still runs (see :meth:`reap`)."""
        for pid, known in self.calls.items():
            if known == call_id:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGTERM)
                self._kill_at.setdefault(pid, time.monotonic() + _CALL_STOP_SECONDS)

    def reap(self) -> None:
        """Report ended calls; kill a call process still running ``_CALL_STOP_SECONDS`` after its stop, and what a
        call process that died left behind (adopted by this subreaper): looked for at each tick while calls run, once
        a child ended, and every ``_IDLE_SCAN_SECONDS`` otherwise."""
        reaped = False
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break
            reaped = True
            self._kill_at.pop(pid, None)
            call_id = self.calls.pop(pid, None)
            if call_id is not None:
                self.emit({"event": "ended", "id": call_id, "code": os.waitstatus_to_exitcode(status)})
        now = time.monotonic()
        for pid in [pid for pid, at in self._kill_at.items() if now >= at]:
            del self._kill_at[pid]
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)  # reaped at a next look; what it left is stopped as orphans
        if not (self.calls or self._orphans or reaped or now >= self._next_scan):
            return
        self._next_scan = now + _IDLE_SCAN_SECONDS
        orphans = [(p.pid, p.create_time()) for p in _children() if p.pid not in self.calls]
        self._orphans = bool(orphans)
        if orphans:
            procs.ProcessTree(orphans).stop(grace_seconds=1.0)

    def shutdown(self) -> None:
        """Stop every call (each stops its own processes), then whatever is left below this process; delete the
        calls' folders (an owner that was killed could not)."""
        for pid in list(self.calls):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + procs.TERM_GRACE_SECONDS + 2
        while self.calls and time.monotonic() < deadline:
            self.reap()
            time.sleep(_TICK_SECONDS)
        procs.ProcessTree(below=os.getpid()).stop(grace_seconds=1.0)
        for folder in self.folders:
            shutil.rmtree(folder, ignore_errors=True)


def _children():
    import psutil

    try:
        return psutil.Process().children()
    except psutil.Error:
        return []


def prepare() -> dict:
    """Import what every call needs (once per process: a zygote's forks find it done); the GPUs torch would see with
    this environment, counted without initialising CUDA."""
    os.environ["PYTORCH_NVML_BASED_CUDA_CHECK"] = "1"  # device_count() through NVML: forked ranks can still use CUDA
    import cloudpickle  # noqa: F401 - preloaded for the ranks
    import torch
    import torch.distributed.launcher.api  # the elastic agent, preloaded for every call

    for name in _LAUNCHER_LOGGERS:
        logging.getLogger(name).setLevel(logging.ERROR)
    rendezvous.register()
    rendezvous.register_static()
    return {"cuda_devices": torch.cuda.device_count()}


def serve(requests, events, owner_alive) -> None:
    """Serve one owner: requests on ``requests``, events on ``events``, until it closes its end or
    ``owner_alive()`` is false."""
    server = Server(events, owner_alive)
    procs.become_subreaper()
    signal.signal(signal.SIGTERM, _end_on_term)
    try:
        ready = prepare()
    except Exception as exc:  # noqa: BLE001 - told to the owner, which raises it with the install hint
        server.emit({"event": "failed", "message": f"{type(exc).__name__}: {exc}"})
        return
    server.emit({"event": "ready", "pid": os.getpid(), **ready})
    buffered = b""
    try:
        while server.owner_alive():
            readable, _, _ = select.select([requests], [], [], server.tick())
            if readable:
                data = os.read(requests.fileno(), 1 << 16)
                if not data:
                    break  # the owner closed its end: it is gone
                buffered += data
                *lines, buffered = buffered.split(b"\n")
                for line in lines:
                    server.handle(json.loads(line))
            server.reap()
    finally:
        server.shutdown()


def _end_on_term(signum, frame) -> None:
    """SIGTERM (a job's cancel stops its whole process tree): leave the loop through the shutdown, which stops the
    calls and deletes their folders; a second SIGTERM does not cut that short."""
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    raise SystemExit(0)


def main() -> None:
    """Serve the owner on stdin and stdout; ``argv[1]``: the folder of its log, deleted once it ends."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # an interrupt of the kernel's process group is the kernel's
    events = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)  # whatever prints to stdout goes to the log, never into the event stream
    owner = os.getppid()
    try:
        serve(sys.stdin.buffer, events, lambda: os.getppid() == owner)
    finally:
        shutil.rmtree(sys.argv[1], ignore_errors=True)


if __name__ == "__main__":
    main()
