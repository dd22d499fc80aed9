"""The calls' live runs registered under an AIR_HOME (``live-runs/<run id>.pid``). The session's AIR_HOME is shared,
and another test's kernel may still have a live run there: a test finds its own as the one that was not there
before it started."""

from __future__ import annotations

import pathlib
import time


def live_run_ids(air_home: pathlib.Path) -> set[str]:
    return {p.name.removesuffix(".pid") for p in (air_home / "live-runs").glob("*.pid")}


def new_live_run(air_home: pathlib.Path, before: set[str], seconds: float = 120) -> str:
    """The id of the one run registered since ``before`` was taken, once there is one."""
    deadline = time.monotonic() + seconds
    while not (new := live_run_ids(air_home) - before):
        assert time.monotonic() < deadline, f"no new live run under {air_home} in {seconds} s"
        time.sleep(0.05)
    (run_id,) = new
    return run_id
