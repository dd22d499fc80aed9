"""The errors raised in the notebook when a distributed call fails on any rank or is interrupted.

In IPython they show the user's own frames and the root cause (``_render_traceback_``), not
jupyter_air's; the full traceback stays on the exception (``traceback.print_exception(sys.last_value)``).
"""

from __future__ import annotations

import signal

from jupyter_air.tracebacks import render
from jupyter_air.tracking.lifecycle import RunStopped


def describe_exit(exitcode: int | None) -> str:
    """Say how a worker process ended, naming the signal when it was killed by one."""
    if exitcode is None:
        return "did not report an exit code"
    if exitcode < 0:
        try:
            return f"was killed by {signal.Signals(-exitcode).name}"
        except ValueError:
            return f"was killed by signal {-exitcode}"
    return f"exited with code {exitcode}"


class DistributedError(RuntimeError):
    """A rank of a distributed call failed; the first failure is described, with its traceback.

    Attributes: ``rank`` (global rank that failed first), ``node`` (its node in a multi-node call, else
    None), ``exitcode``, ``exception_type``,
    ``exception_message``, ``worker_traceback`` (the worker's formatted traceback, with the
    notebook's source lines) and ``failures`` (``{rank: description}`` for every failed rank).
    """

    def __init__(
        self,
        message: str,
        *,
        rank: int | None = None,
        node: int | None = None,
        exitcode: int | None = None,
        exception_type: str | None = None,
        exception_message: str | None = None,
        worker_traceback: str | None = None,
        failures: dict[int, str] | None = None,
    ):
        super().__init__(message)
        self.rank = rank
        self.node = node
        self.exitcode = exitcode
        self.exception_type = exception_type
        self.exception_message = exception_message
        self.worker_traceback = worker_traceback
        self.failures = failures or {}

    def __str__(self) -> str:
        text = self.args[0]
        if self.worker_traceback:
            text += f"\n\nTraceback of rank {self.rank}:\n{self.worker_traceback.rstrip()}"
        return text

    def _render_traceback_(self) -> list[str]:
        details = f"Traceback of rank {self.rank}:\n{self.worker_traceback}" if self.worker_traceback else ""
        return render(self, f"{type(self).__name__}: {self.args[0]}", details)


class DistributedTimeout(DistributedError):
    """The call ran longer than its ``timeout=`` and every worker was stopped."""


class NodeLost(DistributedError):
    """A node of a multi-node call stopped answering (its machine, raylet or actor died); ``node`` names it."""


class CallInterrupted(KeyboardInterrupt):
    """The kernel was interrupted during a call: every worker was stopped and the run marked KILLED."""

    def _render_traceback_(self) -> list[str]:
        return render(self, f"KeyboardInterrupt: {self.args[0]}")


class CallStopped(RunStopped):
    """The call was stopped with its run card's Stop button: every process was stopped, the run marked KILLED."""

    def _render_traceback_(self) -> list[str]:
        return render(self, f"RunStopped: {self.args[0]}")


class CallDetached(KeyboardInterrupt):
    """The kernel was interrupted while following a remote call: the call's job keeps running."""

    def __init__(self, job_run_id: str):
        super().__init__(
            f"stopped following job {job_run_id}; it keeps running. Follow it again with `%air_attach {job_run_id}` "
            f"(or `jupyter_air.attach({job_run_id!r})`, from any kernel), stop it with the card's Stop or "
            f"`air cancel {job_run_id}`"
        )
        self.job_run_id = job_run_id

    def _render_traceback_(self) -> list[str]:
        return render(self, f"KeyboardInterrupt: {self.args[0]}")
