"""The error raised in the notebook when a distributed call fails on any rank."""

from __future__ import annotations

import signal


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


class DistributedTimeout(DistributedError):
    """The call ran longer than its ``timeout=`` and every worker was stopped."""


class NodeLost(DistributedError):
    """A node of a multi-node call stopped answering (its machine, raylet or actor died); ``node`` names it."""
