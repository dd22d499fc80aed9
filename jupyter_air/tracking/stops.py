"""Runs in progress in a kernel: the kernel registers its live run, the server flags Stop requests and ends the
runs of kernels that died.

The Stop button of a run card must work while the kernel is busy running the cell, so it never waits for
the kernel to read a message: the Jupyter server writes a flag file under ``AIR_HOME/live-runs/`` and the
kernel's wait loop (or its watcher thread) looks for it. A registration whose process is gone (a kernel
killed by the OOM killer or ``kill -9``) is a run nobody will end: :func:`reap_dead_runs` ends it FAILED.
Files are owner-only, like everything in AIR_HOME.
"""

from __future__ import annotations

import json
import logging
import os
import pathlib
import re

from jupyter_air.home import air_home, private_dir, private_file
from jupyter_air.procs import is_alive, start_time
from jupyter_air.tracking.lifecycle import ManagedRun
from jupyter_air.tracking.store import tracking_uri as current_uri

#: What an MLflow run id looks like (also the route's pattern): nothing that could leave the folder.
RUN_ID = re.compile(r"[0-9a-zA-Z_-]{1,64}")
_FOLDER = "live-runs"

log = logging.getLogger(__name__)


def _folder(home: pathlib.Path | None) -> pathlib.Path:
    return private_dir((home or air_home()) / _FOLDER)


class PartOfJob(Exception):
    """The run is (part of) an attempt of an ``air`` job: stopping it alone would make the job retry."""

    def __init__(self, run_id: str, job_run_id: str, attempt: str):
        super().__init__(
            f"Run {run_id} runs in attempt {attempt} of the air job {job_run_id}: stopping the run alone would only "
            f"make the job retry. Cancel the job instead: `air cancel {job_run_id}`, or Cancel in the Experiment "
            "panel's Workloads list."
        )
        self.job_run_id = job_run_id


def _checked(run_id: str) -> str:
    if not RUN_ID.fullmatch(run_id or ""):
        raise ValueError(f"{run_id!r} is not an MLflow run id (letters, digits, '_' and '-', at most 64)")
    return run_id


class LiveRun:
    """A run in progress in this process that a Stop request can reach; :meth:`close` when it ends."""

    def __init__(self, run_id: str, home: pathlib.Path | None = None, tracking_uri: str | None = None):
        folder = _folder(home)
        self.run_id = _checked(run_id)
        self._owner = folder / f"{run_id}.pid"
        self._flag = folder / f"{run_id}.stop"
        self._flag.unlink(missing_ok=True)  # a request for an earlier life of this run (MLFLOW_RUN_ID resumed)
        staging = folder / f"{run_id}.pid.tmp"
        owner = {"pid": os.getpid(), "started": start_time(os.getpid()), "tracking_uri": tracking_uri or current_uri()}
        job = {name: os.environ[name] for name in ("AIR_JOB_RUN_ID", "AIR_ATTEMPT") if os.environ.get(name)}
        staging.write_text(json.dumps({**owner, **job}))  # a job's attempt names its job: Stop must cancel that
        staging.chmod(0o600)
        os.replace(staging, self._owner)

    def requested(self) -> bool:
        """True once someone asked to stop this run (one ``stat`` call: cheap enough for every poll)."""
        return self._flag.exists()

    def close(self) -> None:
        """The run ended: later requests are refused, and nothing is left in the folder."""
        for path in (self._owner, self._flag):
            path.unlink(missing_ok=True)


def request_stop(run_id: str, home: pathlib.Path | None = None) -> bool:
    """Ask the process running ``run_id`` to stop it; False when no live process of this user runs it (a
    registration left by a process that died stays for :func:`reap_dead_runs`, which ends its run). A run inside
    an attempt of an ``air`` job raises :class:`PartOfJob`: the job is what is to be stopped.
    """
    folder = _folder(home)
    owner = folder / f"{_checked(run_id)}.pid"
    record = _owner(owner)
    if record is None:
        return False
    if not is_alive(record["pid"], record["started"]):
        return False  # the next reap_dead_runs ends the run
    if record.get("AIR_JOB_RUN_ID"):
        raise PartOfJob(run_id, record["AIR_JOB_RUN_ID"], record.get("AIR_ATTEMPT", ""))
    flag = private_file(folder / f"{run_id}.stop")
    if not owner.exists():  # the run ended meanwhile: leave no flag behind
        flag.unlink(missing_ok=True)
        return False
    return True


def _owner(path: pathlib.Path) -> dict | None:
    """The registration in ``path`` (``pid``, ``started``, ``tracking_uri``), None when it is gone or unreadable."""
    try:
        record = json.loads(path.read_text())
        return record if isinstance(record, dict) and isinstance(record.get("pid"), int) else None
    except (FileNotFoundError, ValueError):
        return None


def reap_dead_runs(home: pathlib.Path) -> list[str]:
    """End FAILED every registered run whose process is gone (its kernel died), and forget it; their run ids."""
    folder = home / _FOLDER
    reaped = []
    for path in sorted(folder.glob("*.pid")) if folder.is_dir() else []:
        record = _owner(path)
        if record is None or is_alive(record["pid"], record["started"]):
            continue
        run_id = path.name.removesuffix(".pid")
        reason = f"its kernel (process {record['pid']}) died while the run was RUNNING (killed, or out of memory)"
        try:
            run = ManagedRun.adopt(run_id, record.get("tracking_uri"))
            if run.client.get_run(run_id).info.status == "RUNNING":
                run.end("FAILED", reason)
                reaped.append(run_id)
        except Exception as exc:  # noqa: BLE001 - a store that cannot be reached now: try again next time
            log.warning("Could not end MLflow run %s of a dead kernel: %s", run_id, exc)
            continue
        for leftover in (path, path.with_suffix(".stop")):
            leftover.unlink(missing_ok=True)
    return reaped
