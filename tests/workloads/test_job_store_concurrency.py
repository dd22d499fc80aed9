"""A new job store opened by many processes at once (as many `air run` on a new AIR_HOME do): every one of them
gets it, none "database is locked"."""

from __future__ import annotations

import multiprocessing
import sqlite3
import threading
import time

from jupyter_air.workloads.state.store import JobStore

PROCESSES = 40
ROUNDS = 3


def _open(home: str, barrier, answers) -> None:
    """In a child: wait for the others, open the store, record a job; put None (done) or the error."""
    barrier.wait()
    try:
        store = JobStore(home)
        spec = {"experiment_name": "e", "compute": {"num_accelerators": 0}, "max_retries": 0}
        store.create_job(spec, "w.yaml", "me", "local")
        answers.put(None)
    except Exception as err:  # noqa: BLE001 - reported to the test, which names it
        answers.put(repr(err))


def test_a_store_opened_while_another_process_writes_to_the_new_file_waits_for_it(tmp_path):
    # Given a new jobs.db that another process holds the write lock of (SQLite answers a switch to WAL at once
    # "database is locked", without waiting as its busy timeout says)
    home = tmp_path / "air"
    home.mkdir(mode=0o700)
    other = sqlite3.connect(home / "jobs.db", isolation_level=None, check_same_thread=False)
    other.execute("BEGIN IMMEDIATE")
    threading.Timer(0.5, other.execute, ["COMMIT"]).start()

    # When the store is opened
    started = time.monotonic()
    store = JobStore(home)

    # Then it waits until the lock is given back, and is usable
    other.close()
    assert time.monotonic() - started >= 0.4
    assert store.list() == []


def test_forty_processes_opening_a_new_store_at_once_all_get_it(tmp_path):
    # Given a fresh AIR_HOME, three times over
    context = multiprocessing.get_context("fork")
    for round_ in range(ROUNDS):
        home = str(tmp_path / f"air-{round_}")
        barrier, answers = context.Barrier(PROCESSES), context.Queue()
        children = [context.Process(target=_open, args=(home, barrier, answers)) for _ in range(PROCESSES)]

        # When forty processes open its job store at the same moment and each records a job
        for child in children:
            child.start()
        errors = [error for error in (answers.get(timeout=120) for _ in children) if error]
        for child in children:
            child.join(timeout=60)

        # Then every one succeeded, and the store holds every job
        assert errors == [], f"round {round_}: {len(errors)} of {PROCESSES} failed: {errors[:3]}"
        assert all(child.exitcode == 0 for child in children)
        assert len(JobStore(home).list(active_only=False, limit=1000)) == PROCESSES
