"""The job store: one SQLite database under AIR_HOME shared safely by every `air` command and supervisor."""

from __future__ import annotations

import contextlib
import json
import secrets
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from jupyter_air.home import private_dir, private_file, unusable_database
from jupyter_air.tracking.naming import SCHEDULE_TAG
from jupyter_air.workloads.state.records import ACTIVE, Attempt, Job, job_from_row, now_ms
from jupyter_air.workloads.state.schema import create_tables, write_ahead

#: Job filters that are no column of their own: the schedule that fired a job is a tag of its workload.
_DERIVED = {"schedule": f"""json_extract(workload, '$.tags."{SCHEDULE_TAG}"')"""}


class JobStore:
    """Jobs and attempts in `<home>/jobs.db` (WAL mode, so readers never block the supervisors)."""

    def __init__(self, home: Path):
        self.home = private_dir(Path(home))
        self.path = self.home / "jobs.db"
        with self._usable():
            private_file(self.path)  # SQLite gives its -wal and -shm files the same mode
            write_ahead(self.path)
        with self._connect(immediate=True) as db:  # one process at a time creates or upgrades the tables
            create_tables(db)

    @contextlib.contextmanager
    def _usable(self) -> Iterator[None]:
        """Turn a damaged jobs.db or a full disk into an :class:`UnusableDatabase` that names the file and the fix."""
        try:
            yield
        except (sqlite3.Error, OSError) as exc:
            problem = unusable_database(self.path, exc)
            if problem is None:
                raise
            raise problem from exc

    def job_dir(self, job_run_id: str) -> Path:
        return self.home / "jobs" / job_run_id

    def transaction(self, immediate: bool = False) -> contextlib.AbstractContextManager[sqlite3.Connection]:
        """One transaction (``immediate``: holding the write lock from its start), committed when the block ends."""
        return self._connect(immediate)

    @contextlib.contextmanager
    def _connect(self, immediate: bool = False) -> Iterator[sqlite3.Connection]:
        with self._usable():
            db = sqlite3.connect(self.path, timeout=30, isolation_level=None)
            db.row_factory = sqlite3.Row
            try:
                db.execute("PRAGMA busy_timeout=30000")
                db.execute("BEGIN IMMEDIATE" if immediate else "BEGIN")
                try:
                    yield db
                except BaseException:
                    with contextlib.suppress(sqlite3.Error):  # a full disk may refuse this too; closing undoes it
                        db.execute("ROLLBACK")
                    raise
                db.execute("COMMIT")
            finally:
                db.close()

    def create_job(
        self, workload: dict[str, Any], source: str, user: str, executor: str, tracking_uri: str | None = None
    ) -> Job:
        """Record a submitted job; ``tracking_uri`` is the MLflow store its attempts' runs go to."""
        job_run_id = f"job-{secrets.token_hex(6)}"
        with self._connect(immediate=True) as db:
            db.execute(
                "INSERT INTO jobs (job_run_id, experiment_name, status, workload, source, user, executor,"
                " num_accelerators, max_retries, gpus, submitted_ms, tracking_uri) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
                (
                    job_run_id,
                    workload["experiment_name"],
                    "PENDING",
                    json.dumps(workload),
                    source,
                    user,
                    executor,
                    workload["compute"]["num_accelerators"],
                    workload["max_retries"],
                    "[]",
                    now_ms(),
                    tracking_uri,
                ),
            )
        private_dir(self.job_dir(job_run_id))
        return self.get(job_run_id)

    def get(self, job_run_id: str) -> Job | None:
        with self._connect() as db:
            row = db.execute("SELECT * FROM jobs WHERE job_run_id = ?", (job_run_id,)).fetchone()
            if row is None:
                return None
            rows = db.execute("SELECT * FROM attempts WHERE job_run_id = ? ORDER BY attempt", (job_run_id,)).fetchall()
        return job_from_row(row, [Attempt(**dict(r)) for r in rows])

    def list(self, active_only: bool = True, limit: int = 50, **equal: str) -> list[Job]:
        clauses, args = [], []
        if active_only:
            clauses.append(f"status IN ({','.join('?' * len(ACTIVE))})")
            args.extend(ACTIVE)
        for column, value in equal.items():
            clauses.append(f"{_DERIVED.get(column, column)} = ?")
            args.append(value)
        where = f"WHERE {' AND '.join(clauses)}" if clauses else ""
        with self._connect() as db:
            rows = db.execute(
                f"SELECT * FROM jobs {where} ORDER BY submitted_ms DESC, rowid DESC LIMIT ?", (*args, limit)
            ).fetchall()
            ids = [r["job_run_id"] for r in rows]
            attempts = db.execute(
                f"SELECT * FROM attempts WHERE job_run_id IN ({','.join('?' * len(ids))}) ORDER BY attempt", ids
            ).fetchall()
        by_job: dict[str, list[Attempt]] = {}
        for a in attempts:
            by_job.setdefault(a["job_run_id"], []).append(Attempt(**dict(a)))
        return [job_from_row(r, by_job.get(r["job_run_id"], [])) for r in rows]

    def update(self, job_run_id: str, **values: Any) -> None:
        if "gpus" in values:
            values["gpus"] = json.dumps(values["gpus"])
        sets = ", ".join(f"{k} = ?" for k in values)
        with self._connect(immediate=True) as db:
            db.execute(f"UPDATE jobs SET {sets} WHERE job_run_id = ?", (*values.values(), job_run_id))

    def finish(
        self,
        job_run_id: str,
        status: str,
        error: str | None = None,
        exit_code: int | None = None,
        open_attempts: str | None = None,
    ) -> bool:
        """End an active job; False when it had already ended (another command got there first).

        ``open_attempts``: the status to give its attempts still open, in the same transaction (used when
        the supervisor cannot end them itself), so no reader sees an ended job with a running attempt.
        """
        with self._connect(immediate=True) as db:
            cur = db.execute(
                "UPDATE jobs SET status = ?, error = ?, exit_code = ?, ended_ms = ?"
                f" WHERE job_run_id = ? AND status IN ({','.join('?' * len(ACTIVE))})",
                (status, error, exit_code, now_ms(), job_run_id, *ACTIVE),
            )
            if cur.rowcount == 1 and open_attempts is not None:
                db.execute(
                    "UPDATE attempts SET status = ?, ended_ms = ?, error = ? WHERE job_run_id = ? AND ended_ms IS NULL",
                    (open_attempts, now_ms(), error, job_run_id),
                )
            return cur.rowcount == 1

    def start_attempt(self, job_run_id: str, attempt: int, mlflow_run_id: str, url: str | None) -> None:
        with self._connect(immediate=True) as db:
            db.execute(
                "INSERT INTO attempts (job_run_id, attempt, status, mlflow_run_id, mlflow_run_url, started_ms)"
                " VALUES (?,?,?,?,?,?)",
                (job_run_id, attempt, "RUNNING", mlflow_run_id, url, now_ms()),
            )

    def update_attempt(self, job_run_id: str, attempt: int, **values: Any) -> None:
        sets = ", ".join(f"{k} = ?" for k in values)
        with self._connect(immediate=True) as db:
            db.execute(
                f"UPDATE attempts SET {sets} WHERE job_run_id = ? AND attempt = ?",
                (*values.values(), job_run_id, attempt),
            )
