"""The tables of the job store (``jobs.db``), created or upgraded by whichever process opens it first, and its
write-ahead log, switched on even while many processes open a new database at once."""

from __future__ import annotations

import contextlib
import random
import sqlite3
import time
from pathlib import Path

_SCHEMA = """
CREATE TABLE IF NOT EXISTS jobs (
    job_run_id TEXT PRIMARY KEY,
    experiment_name TEXT NOT NULL,
    experiment_id TEXT,
    status TEXT NOT NULL,
    workload TEXT NOT NULL,
    source TEXT NOT NULL,
    user TEXT NOT NULL,
    executor TEXT NOT NULL,
    num_accelerators INTEGER NOT NULL,
    max_retries INTEGER NOT NULL,
    gpus TEXT,
    submitted_ms INTEGER NOT NULL,
    started_ms INTEGER,
    ended_ms INTEGER,
    supervisor_pid INTEGER,
    supervisor_started REAL,
    cancel_requested INTEGER NOT NULL DEFAULT 0,
    exit_code INTEGER,
    error TEXT,
    tracking_uri TEXT,
    ray_job_url TEXT,
    ray_status TEXT
);
CREATE INDEX IF NOT EXISTS jobs_status ON jobs (status);
CREATE TABLE IF NOT EXISTS attempts (
    job_run_id TEXT NOT NULL REFERENCES jobs (job_run_id),
    attempt INTEGER NOT NULL,
    status TEXT NOT NULL,
    mlflow_run_id TEXT,
    mlflow_run_url TEXT,
    started_ms INTEGER NOT NULL,
    ended_ms INTEGER,
    pid INTEGER,
    pid_started REAL,
    exit_code INTEGER,
    error TEXT,
    nodes TEXT,
    PRIMARY KEY (job_run_id, attempt)
);
CREATE TABLE IF NOT EXISTS schedules (
    name TEXT PRIMARY KEY,
    expression TEXT NOT NULL,
    timezone TEXT NOT NULL,
    paused INTEGER NOT NULL,
    catchup TEXT NOT NULL,
    max_concurrent_runs INTEGER NOT NULL,
    workload TEXT NOT NULL,
    source TEXT NOT NULL,
    user TEXT NOT NULL,
    ray_address TEXT,
    next_fire_ms INTEGER,
    created_ms INTEGER NOT NULL,
    updated_ms INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS schedules_due ON schedules (next_fire_ms);
CREATE TABLE IF NOT EXISTS permissions (
    target TEXT NOT NULL,
    principal TEXT NOT NULL,
    level TEXT NOT NULL,
    granted_by TEXT NOT NULL,
    granted_ms INTEGER NOT NULL,
    PRIMARY KEY (target, principal)
);
CREATE TABLE IF NOT EXISTS schedule_fires (
    name TEXT NOT NULL,
    scheduled_ms INTEGER NOT NULL,
    fired_ms INTEGER NOT NULL,
    outcome TEXT NOT NULL,
    job_run_id TEXT,
    reason TEXT,
    windows INTEGER NOT NULL DEFAULT 1,
    manual INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (name, scheduled_ms)
);
CREATE TABLE IF NOT EXISTS gpu_claims (
    claim_id TEXT PRIMARY KEY,
    kind TEXT NOT NULL,
    user TEXT NOT NULL,
    label TEXT NOT NULL,
    count INTEGER NOT NULL,
    gpus TEXT,
    submitted_ms INTEGER NOT NULL,
    granted_ms INTEGER,
    pid INTEGER NOT NULL,
    pid_started REAL,
    pool TEXT NOT NULL DEFAULT ''
);
CREATE TABLE IF NOT EXISTS gpu_use (
    user TEXT NOT NULL,
    gpus INTEGER NOT NULL,
    start_ms INTEGER NOT NULL,
    end_ms INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS gpu_use_end ON gpu_use (end_ms);
CREATE TABLE IF NOT EXISTS driver_ticks (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    ticked_ms INTEGER NOT NULL
);
"""

#: Columns added after the first release: created in databases made before them.
_ADDED_COLUMNS = {
    "jobs": {"tracking_uri": "TEXT", "ray_job_url": "TEXT", "ray_status": "TEXT"},
    "attempts": {"nodes": "TEXT"},
    "gpu_claims": {"pool": "TEXT NOT NULL DEFAULT ''"},
}


#: Seconds to keep trying to switch a new database to WAL while other processes hold it (SQLite's busy timeout does
#: not cover the switch: it answers "database is locked" at once).
WAL_WAIT_SECONDS = 30.0


def write_ahead(path: Path) -> None:
    """Put the database at ``path`` in WAL mode (readers never block writers), retrying with back-off while another
    process holds it; raises sqlite3.Error (a lock past WAL_WAIT_SECONDS, a damaged file)."""
    deadline, pause = time.monotonic() + WAL_WAIT_SECONDS, 0.002
    while True:
        try:
            with contextlib.closing(sqlite3.connect(path, timeout=WAL_WAIT_SECONDS)) as db:
                db.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if not _busy(exc) or time.monotonic() + pause > deadline:
                raise
        time.sleep(pause * random.uniform(0.5, 1.5))  # jittered, so the processes that collided do not again
        pause = min(pause * 2, 0.25)


def _busy(exc: sqlite3.OperationalError) -> bool:
    """Whether SQLite refused because another connection holds the database (SQLITE_BUSY or SQLITE_LOCKED)."""
    code = getattr(exc, "sqlite_errorcode", None)
    if code is None:
        return "locked" in str(exc) or "busy" in str(exc)
    return code & 0xFF in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)


def create_tables(db: sqlite3.Connection) -> None:
    """Create the missing tables, indexes and columns, a new table filled from what older ones tell (in the caller's
    write transaction)."""
    for statement in filter(str.strip, _SCHEMA.split(";")):
        db.execute(statement)
    for table, columns in _ADDED_COLUMNS.items():
        have = {row[1] for row in db.execute(f"PRAGMA table_info({table})")}
        for name, kind in columns.items():
            if name not in have:
                db.execute(f"ALTER TABLE {table} ADD COLUMN {name} {kind}")
    # A store from before driver_ticks: its drivers last ticked when they last fired a schedule by time.
    db.execute(
        "INSERT OR IGNORE INTO driver_ticks (id, ticked_ms) SELECT 1, MAX(fired_ms) FROM schedule_fires"
        " WHERE manual = 0 HAVING MAX(fired_ms) IS NOT NULL"
    )
