"""A supervisor's writes of its job's state on a disk that may fill up: the end of a job is always recorded, with
its reason, once there is room (never as "supervisor is gone"); the details of a running attempt are skipped."""

from __future__ import annotations

import contextlib
import logging
import time
from pathlib import Path

from jupyter_air.home import SpaceReserve, disk_full, full_disk_message

log = logging.getLogger("jupyter_air.workloads.supervisor.process")

#: Seconds between two tries to record a job's end while the disk holding AIR_HOME is full.
RETRY_SECONDS = 2.0
#: File in the job's folder holding some room on the disk, given back to record the job's end on a full disk.
RESERVE = "space.reserve"


class StateWrites:
    """The writes of job ``job_run_id``'s state under AIR_HOME ``home``, its folder holding the :data:`RESERVE`."""

    def __init__(self, home: Path, job_dir: Path, job_run_id: str):
        self.home, self.job_run_id = home, job_run_id
        self.reserve = SpaceReserve(job_dir / RESERVE)

    def until_recorded(self, write):
        """Make a write of the job's state; while the disk is full, give back the reserve and try again every few
        seconds, so the job ends with its reason once there is room."""
        waiting = False
        while True:
            try:
                return write()
            except Exception as exc:
                if not disk_full(exc, self.home):
                    raise
                if self.reserve.release():
                    continue
                if not waiting:
                    log.warning("%s; job %s ends once there is room.", full_disk_message(self.home), self.job_run_id)
                    waiting = True
                time.sleep(RETRY_SECONDS)

    @contextlib.contextmanager
    def unless_disk_full(self):
        """Writes about a running attempt (its PID, nodes, link) that a full disk skips: the attempt goes on."""
        try:
            yield
        except Exception as exc:
            if not disk_full(exc, self.home):
                raise
            log.warning("%s; the running attempt's details are not recorded", full_disk_message(self.home))
