"""What every resident process of an AIR_HOME shares (its MLflow server, its fork server zygote): it is started
detached, in a session of its own (an interrupt of the kernel or terminal that started it is not for it), in AIR_HOME,
its output in a private log under ``AIR_HOME/logs``, with none of its starter's call, job or run variables, and it
stops by itself after an idle time its environment variable sets.

What a Jupyter server starts for itself stops with it: the server names itself in :data:`STARTER_ENV`, which its
kernels and terminals inherit, so a resident process that any of them starts knows the server. Every process that
uses a resident one holds it (:func:`hold`: a file named after its PID in the resident's holders folder). Once the
server has exited, the resident stops within seconds unless another live process holds it; if one
does, only the idle stop applies (:class:`StarterWatch`)."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

from jupyter_air import procs
from jupyter_air.home import air_home, open_private, private_dir

#: Variables a resident process never inherits from whoever started it: it belongs to no call, job or run.
NOT_INHERITED = ("AIR_CALL_ID", "AIR_JOB_RUN_ID", "AIR_ATTEMPT", "MLFLOW_RUN_ID", "MLFLOW_EXPERIMENT_ID")
#: ``<pid>:<start time>`` of the Jupyter server whose resident processes stop with it (set by the server).
STARTER_ENV = "AIR_RESIDENT_STARTER"
#: Seconds after the starter's exit before a resident decides (its kernels, killed with it, are gone by then).
SETTLE_SECONDS = 3.0
_held: set[Path] = set()


def idle_seconds(name: str, default: float) -> float:
    """``$name`` or ``default``: how long a resident process stays idle before it stops; ValueError (saying what to
    set) for a value that is not a positive number."""
    raw = os.environ.get(name, "").strip()
    try:
        value = float(raw) if raw else default
    except ValueError:
        value = 0.0
    if not value > 0:
        raise ValueError(f"{name}={raw!r}: expected a positive number of seconds, e.g. {default:g}")
    return value


def start(command: list[str], log_name: str, idle: tuple[str, float], env: dict[str, str] | None = None):
    """Start ``command`` as a resident process of AIR_HOME, its output in ``AIR_HOME/logs/<log_name>``, its idle
    time ``idle`` (the variable and its default) checked here and passed on, ``env`` added to this environment."""
    home = air_home()
    name, default = idle
    environment = {k: v for k, v in os.environ.items() if k not in NOT_INHERITED}
    environment.update({name: str(idle_seconds(name, default)), **(env or {})})
    with open_private(private_dir(home / "logs") / log_name) as log:
        process = subprocess.Popen(
            command, cwd=home, env=environment, stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True
        )
    threading.Thread(target=process.wait, name=f"air-reaper-{process.pid}", daemon=True).start()
    return process


def mark_starter() -> None:
    """Make this process (a Jupyter server) the starter of the resident processes that it, its kernels and its
    terminals start: they stop with it unless another process holds them."""
    os.environ[STARTER_ENV] = _entry(os.getpid())


def holders_dir(resident_file: Path) -> Path:
    """The holders folder of the resident process whose record or lock is ``resident_file``."""
    return resident_file.with_name(resident_file.name + ".holders")


def hold(resident_file: Path) -> None:
    """Say that this process uses the resident process of ``resident_file`` (once per process; never fails)."""
    folder = holders_dir(resident_file)
    if folder in _held:
        return
    with contextlib.suppress(OSError):
        (private_dir(folder) / _entry(os.getpid()).replace(":", "-")).touch(mode=0o600)
        _held.add(folder)


def live_holders(folder: Path) -> list[int]:
    """The PIDs of the live processes that hold ``folder``'s resident; the entries of dead ones are removed."""
    alive = []
    for entry in _entries(folder):
        pid, _, started = entry.name.partition("-")
        try:
            pid, started = int(pid), float(started)
        except ValueError:
            continue
        if procs.is_alive(pid, started):
            alive.append(pid)
        else:
            entry.unlink(missing_ok=True)
    return alive


class StarterWatch:
    """Asked every second or so by a resident process: True once it should stop because the Jupyter server that
    started it (``$AIR_RESIDENT_STARTER``) exited :data:`SETTLE_SECONDS` ago and no other live process holds it.
    Decided once: a resident still held then keeps only its idle stop. Never True without a starter."""

    def __init__(self, holders: Path):
        self.holders = holders
        self.kept_for: list[int] = []
        raw = os.environ.get(STARTER_ENV, "")
        pid, _, started = raw.partition(":")
        try:
            self._starter: tuple[int, float] | None = (int(pid), float(started))
        except ValueError:
            self._starter = None
        self._gone_at: float | None = None

    def should_stop(self) -> bool:
        if self._starter is None:
            return False
        if self._gone_at is None:
            if procs.is_alive(*self._starter):
                return False
            self._gone_at = time.monotonic()
        if time.monotonic() - self._gone_at < SETTLE_SECONDS:
            return False
        self.kept_for = live_holders(self.holders)  # the starter's own entry is a dead process's by now
        self._starter = None
        return not self.kept_for

    def say_kept(self) -> None:
        """Say in this resident's log, once, which processes kept it after its starter exited."""
        if self.kept_for:
            print(f"jupyter_air: the Jupyter server that started this exited; kept for {self.kept_for} until idle")
            sys.stdout.flush()
            self.kept_for = []


def _entry(pid: int) -> str:
    return f"{pid}:{procs.start_time(pid)}"


def _entries(folder: Path) -> list[Path]:
    try:
        return list(folder.iterdir())
    except OSError:
        return []
