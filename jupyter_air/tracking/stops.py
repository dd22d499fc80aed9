"""Stop requests for runs in progress in a kernel: the kernel registers its live run, the server flags it.

The Stop button of a run card must work while the kernel is busy running the cell, so it never waits for
the kernel to read a message: the Jupyter server writes a flag file under ``AIR_HOME/live-runs/`` and the
kernel's wait loop (or its watcher thread) looks for it. Files are owner-only, like everything in AIR_HOME.
"""

from __future__ import annotations

import contextlib
import os
import pathlib
import re

from jupyter_air.home import air_home, private_dir, private_file
from jupyter_air.procs import is_alive, start_time

#: What an MLflow run id looks like (also the route's pattern): nothing that could leave the folder.
RUN_ID = re.compile(r"[0-9a-zA-Z_-]{1,64}")
_FOLDER = "live-runs"


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

    def __init__(self, run_id: str, home: pathlib.Path | None = None):
        folder = _folder(home)
        self.run_id = _checked(run_id)
        self._owner = folder / f"{run_id}.pid"
        self._flag = folder / f"{run_id}.stop"
        self._flag.unlink(missing_ok=True)  # a request for an earlier life of this run (MLFLOW_RUN_ID resumed)
        staging = folder / f"{run_id}.pid.tmp"
        job = [os.environ.get(name, "") for name in ("AIR_JOB_RUN_ID", "AIR_ATTEMPT")]  # set inside a job's attempt
        staging.write_text(" ".join([str(os.getpid()), str(start_time(os.getpid())), *job]).strip())
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
    """Ask the process running ``run_id`` to stop it; False when no live process of this user runs it.

    A registration left by a process that died (a kernel killed mid-run) is removed on the way. A run inside
    an attempt of an ``air`` job raises :class:`PartOfJob`: the job is what is to be stopped.
    """
    folder = _folder(home)
    owner = folder / f"{_checked(run_id)}.pid"
    try:
        pid, started, *job = owner.read_text().split()
    except (FileNotFoundError, ValueError):
        return False
    if not is_alive(int(pid), None if started == "None" else float(started)):
        with contextlib.suppress(FileNotFoundError):
            owner.unlink()
        return False
    if len(job) == 2:
        raise PartOfJob(run_id, *job)
    flag = private_file(folder / f"{run_id}.stop")
    if not owner.exists():  # the run ended meanwhile: leave no flag behind
        flag.unlink(missing_ok=True)
        return False
    return True
