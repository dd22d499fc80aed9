"""One node of an attempt: the workload's command, the pump that writes its output, and stopping them both."""

from __future__ import annotations

import difflib
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Mapping
from pathlib import Path

from jupyter_air import procs, scratch
from jupyter_air.growing import line_text
from jupyter_air.programs import path_first
from jupyter_air.workloads.supervisor.pump import FAILED, PUMP_ENV
from jupyter_air.workloads.supervisor.service_secrets import without_service_secrets

#: Seconds the pump may take to write what is left once every process of the workload is gone.
_PUMP_DRAIN_SECONDS = 10.0
#: Seconds the end of the command waits for the pump to write its output (longer only if a background child holds
#: the pipe, which ``finish`` stops).
_SETTLE_SECONDS = 5.0
#: What /bin/sh runs itself (builtins and keywords of dash, and of bash where /bin/sh is bash): no program of
#: that name is needed.
_SHELL_WORDS = frozenset(
    (  # noqa: SIM905 - a sentence of words reads better than a list of 80
        ". : [ [[ ! { } alias bg break cd command continue echo eval exec exit export false fg getopts hash jobs "
        "kill local printf pwd read readonly return set shift test times trap true type ulimit umask unalias unset "
        "wait case do done elif else esac fi for if in then until while function select time coproc source "
        "declare typeset let shopt pushd popd dirs builtin enable mapfile readarray disown suspend"
    ).split()
)


class NodeProcess:
    """The command in its own session, its output piped to a separate log pump process.

    Every process it starts carries ``marker`` in its environment, so ``stop`` finds them all,
    daemons that left the session included.
    """

    def __init__(
        self,
        command: str,
        cwd: str,
        env: Mapping[str, str],
        log_dir: Path,
        marker: Mapping[str, str],
        umask: int | None = None,
        account=None,
    ):
        """``account``: the ``run_as.Account`` the command runs as (None: this process's)."""
        self.command = command
        self.cwd = cwd
        self.env = {**env, "PATH": path_first(env.get("PATH")), **marker}
        self.env = account.environment(self.env) if account else self.env
        self.account = account
        self.log_dir = log_dir
        self.marker = dict(marker)
        self.umask = umask
        self.proc: subprocess.Popen | None = None
        self.started: float | None = None
        self.tree = procs.ProcessTree(marker=marker)
        self._pump: subprocess.Popen | None = None
        self._log_error: str | None = None
        self._reports: threading.Thread | None = None
        self._stopped_code: int | None = None
        self._settled = False

    def start(self) -> None:
        read_end, write_end = os.pipe()
        try:
            self._pump = subprocess.Popen(
                [sys.executable, "-m", "jupyter_air.workloads.supervisor.pump", str(self.log_dir)],
                stdin=read_end,
                stdout=subprocess.PIPE,
                env={**_without(without_service_secrets(os.environ), self.marker), **pump_marker(self.marker)},
            )
            self.proc = subprocess.Popen(
                self.command,
                shell=True,
                cwd=self.cwd,
                env=self.env,
                stdin=subprocess.DEVNULL,
                stdout=write_end,
                stderr=write_end,
                start_new_session=True,
                **({} if self.umask is None else {"umask": self.umask}),
                **(self.account.popen() if self.account else {}),
            )
        finally:
            os.close(read_end)
            os.close(write_end)
        self.started = procs.start_time(self.proc.pid)
        self.tree.add_root(self.proc.pid, self.started)
        self._reports = threading.Thread(target=self._read_reports, name="air-log-pump-reports", daemon=True)
        self._reports.start()

    @property
    def pid(self) -> int | None:
        return None if self.proc is None else self.proc.pid

    @property
    def problem(self) -> str | None:
        """Why the attempt fails whatever its exit status: ``log write failed: <reason>`` once the pump could not
        write the output."""
        return self._log_error

    def poll(self) -> int | None:
        code = self.proc.poll()
        return self._stopped_code if self._stopped_code is not None else code

    def wait(self, timeout: float) -> int | None:
        """The exit status once the command ended and its output was written (:meth:`settle`), else None."""
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return None
        self.settle()
        return self.poll()

    def settle(self) -> None:
        """Once the command has ended: let the pump write what it wrote and report a failed write, so that a full
        disk is known before the attempt is judged (at most _SETTLE_SECONDS, once)."""
        if self._settled:
            return
        self._settled = True
        try:
            self._pump.wait(timeout=_SETTLE_SECONDS)
        except subprocess.TimeoutExpired:
            return
        if self._reports is not None:
            self._reports.join(timeout=_SETTLE_SECONDS)

    def stop(self, grace_seconds: float = procs.TERM_GRACE_SECONDS) -> int | None:
        """Stop every process of the command; its exit status (negative: the signal that ended it), kept for
        :meth:`poll`. The stop may reap the command first: ``Popen`` (waiting in another thread, as a node's
        agent does) then finds no child and says 0, so the status the stop read wins."""
        codes = self.tree.stop(grace_seconds)
        if self.proc.pid in codes:
            self._stopped_code = codes[self.proc.pid]
        return self.poll()

    def finish(self) -> None:
        """Stop what the command left running, remove the temporary folders of its calls that a stop cut short (a
        fork server killed amid its own clean-up), then let the pump write the rest of the output and exit."""
        self.tree.stop(grace_seconds=2)
        scratch.sweep(parent=Path(self.env.get("TMPDIR") or tempfile.gettempdir()))
        try:
            self._pump.wait(timeout=_PUMP_DRAIN_SECONDS)
        except subprocess.TimeoutExpired:  # a process we cannot stop holds the pipe: keep what was written
            self._pump.kill()
            self._pump.wait()
        if self._reports is not None:
            self._reports.join(timeout=5)

    def _read_reports(self) -> None:
        for line in self._pump.stdout:
            text = line_text(line).strip()
            if text.startswith(FAILED) and self._log_error is None:
                self._log_error = text
        self._pump.stdout.close()


def pump_marker(marker: Mapping[str, str]) -> dict[str, str]:
    """The environment entry that names the log pump of the node whose processes carry ``marker``."""
    return {PUMP_ENV: ",".join(f"{k}={v}" for k, v in sorted(marker.items()))}


def wait_for_pump(marker: Mapping[str, str], timeout: float = _PUMP_DRAIN_SECONDS) -> None:
    """Wait until the log pump of a node whose supervisor is gone has written the rest and exited."""
    import psutil

    pumps = procs.ProcessTree(marker=pump_marker(marker)).scan()
    _, alive = psutil.wait_procs(pumps, timeout=timeout)
    for pump in alive:
        pump.kill()


def _without(env: Mapping[str, str], keys: Mapping[str, str]) -> dict[str, str]:
    return {k: v for k, v in env.items() if k not in keys}


def missing_program(command: str, cwd: str, env: Mapping[str, str]) -> str | None:
    """Why /bin/sh would not find the program ``command`` starts with (it would exit 127), or None when it would
    (or when the shell decides at run time: a variable, a glob, a subshell)."""
    try:
        words = shlex.split(command, comments=True)
    except ValueError:
        return None
    while words and "=" in words[0] and words[0].split("=", 1)[0].isidentifier():
        words.pop(0)  # VAR=value before the program
    if not words or words[0] in _SHELL_WORDS or any(c in words[0] for c in "$`*?[~(){};|&<>"):
        return None
    program = words[0]
    if "/" in program:
        return None if Path(cwd, program).exists() else f"{program!r} does not exist (in {cwd})"
    path = env.get("PATH", os.defpath)
    if shutil.which(program, path=path):
        return None
    names = {entry.name for folder in path.split(os.pathsep) if os.path.isdir(folder) for entry in os.scandir(folder)}
    close = difflib.get_close_matches(program, sorted(names), n=1, cutoff=0.75)
    hint = f"did you mean {close[0]!r}? " if close else ""
    return f"{program!r} is not on PATH (command not found); {hint}check its spelling, or give its path"
