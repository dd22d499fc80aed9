"""Work done ahead in a kernel, so the first tracked call does not wait for it.

When the magics load, AIR_HOME's resident MLflow server is started on a background thread unless it runs (the
kernel reaches the store through its REST API and never imports MLflow for it). When ``@distributed`` defines a
call, the fork server that runs the calls is started: a separate process that imports torch (the kernel never
does).
"""

from __future__ import annotations

import logging
import threading

from jupyter_air.tracking import resident
from jupyter_air.tracking.store import sqlite_path, tracking_uri
from jupyter_air.training.forkserver_client import Launcher

log = logging.getLogger(__name__)

_threads: dict[str, threading.Thread] = {}
_lock = threading.Lock()


def warm_up(*parts: str) -> None:
    """Start the background preparation of ``parts`` (``"tracking"``, ``"launcher"``), each once per process."""
    with _lock:
        for part in parts:
            if part not in _threads:
                thread = threading.Thread(target=_prepare, args=(part,), name=f"air-warm-up-{part}", daemon=True)
                _threads[part] = thread
                thread.start()


def wait(part: str) -> None:
    """Wait for the preparation of ``part`` if one was started (so nothing imports the same modules beside it)."""
    thread = _threads.get(part)
    if thread is not None and thread is not threading.current_thread():
        thread.join()


def _prepare(part: str) -> None:
    try:
        _STEPS[part]()
    except Exception as exc:  # noqa: BLE001 - the call itself reports any real problem, with its context
        log.debug("Warming up %s failed: %s", part, exc)


def _tracking() -> None:
    uri = tracking_uri()
    if uri == resident.embedded_uri() and sqlite_path(uri).is_file():  # a new store is made by the first call
        resident.ensure(uri)  # does not wait for it to answer: a call that comes first uses MLflow's client


def _launcher() -> None:
    Launcher.get()


_STEPS = {"tracking": _tracking, "launcher": _launcher}
