"""When a driver (a Jupyter server, `air scheduler`, the team's job service) last ticked the schedules of one
AIR_HOME, and whether they wait for one: an unpaused schedule whose next fire time passed longer ago than any
running driver lets it."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from typing import Any

from jupyter_air.workloads.state.records import Schedule

#: Seconds between two records of a driver's tick: in between, a tick that finds nothing due stays a read.
RECORD_SECONDS = 30
#: A next fire time past by more than this means that no driver runs: a running one fires it within about a second
#: (its check wakes at each due time), as ``tick.LATE_SECONDS`` counts a fire found later as missed.
STALLED_SECONDS = 60


@dataclass(frozen=True)
class Driver:
    """Whether the schedules are fired: when a driver last ticked (None: none has since the job store records
    ticks), and whether an unpaused schedule waits past its fire time for one."""

    last_tick_ms: int | None
    stalled: bool

    def to_json(self) -> dict[str, Any]:
        return {"last_tick_ms": self.last_tick_ms, "stalled": self.stalled}

    @classmethod
    def from_json(cls, data: dict[str, Any] | None) -> Driver | None:
        """The driver a schedules listing names (None: one from a service that does not say)."""
        return None if data is None else cls(data.get("last_tick_ms"), bool(data.get("stalled")))


def stalled(schedules: list[Schedule], last_tick_ms: int | None, now: int) -> Driver:
    """Whether ``schedules`` wait for a driver at ``now`` (epoch ms): one unpaused has a next fire time past by more
    than STALLED_SECONDS (a driver ticking since would have moved it on)."""
    late = now - STALLED_SECONDS * 1000
    waiting = any(not s.paused and s.next_fire_ms is not None and s.next_fire_ms < late for s in schedules)
    return Driver(last_tick_ms, waiting)


def last_tick_ms(db: sqlite3.Connection) -> int | None:
    """When a driver last recorded a tick (None: never)."""
    row = db.execute("SELECT ticked_ms FROM driver_ticks WHERE id = 1").fetchone()
    return row[0] if row else None


def record_due(last_ms: int | None, now: int) -> bool:
    """Whether a tick at ``now`` that finds nothing due records itself: the last record is RECORD_SECONDS old."""
    return last_ms is None or now - last_ms >= RECORD_SECONDS * 1000


def record(db: sqlite3.Connection, now: int) -> None:
    """Record a driver's tick at ``now``, in the caller's write transaction (a clock behind another driver's never
    moves it back)."""
    db.execute(
        "INSERT INTO driver_ticks (id, ticked_ms) VALUES (1, ?)"
        " ON CONFLICT (id) DO UPDATE SET ticked_ms = MAX(ticked_ms, excluded.ticked_ms)",
        (now,),
    )
