"""AIR_HOME's resident MLflow servers and fork server zygotes in tests: they outlive the process that started them,
by design."""

from __future__ import annotations

import contextlib
import pathlib
import time

import psutil

from jupyter_air.tracking import resident
from jupyter_air.training import zygote_client


def records(folder: pathlib.Path) -> list[pathlib.Path]:
    """Every resident server record under ``folder`` (AIR_HOMEs inside it included)."""
    return sorted(folder.rglob("mlflow-server*.json"))


def resident_pids(home: pathlib.Path) -> set[int]:
    """The processes of the resident MLflow servers recorded in ``home`` (each server and its children)."""
    pids = set()
    for record in records(home):
        server = resident.read(record)
        if server is None or not server.alive():
            continue
        pids.add(server.pid)
        with contextlib.suppress(psutil.Error):
            pids.update(child.pid for child in psutil.Process(server.pid).children(recursive=True))
    return pids | {held[0] for lock in zygote_locks(home) if (held := zygote_client.holder(lock))}


def zygote_locks(folder: pathlib.Path) -> list[pathlib.Path]:
    """The lock of every fork server zygote under ``folder`` (its children, kernels' fork servers, are not resident)."""
    return sorted(folder.rglob("forks-*.pid"))


def stop_all(folder: pathlib.Path) -> None:
    for record in records(folder):
        resident.stop(record)
    for lock in zygote_locks(folder):
        zygote_client.stop(lock)


def until(predicate, timeout: float, step: float = 0.2) -> None:
    """Wait until ``predicate()`` is true (fails after ``timeout`` seconds); a wait, not a speed assertion."""
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "condition not reached in time"
        time.sleep(step)
