"""Work done ahead in a kernel, on a background thread, so the first tracked call does not wait for it.

When the magics load, MLflow is imported and the tracking store made ready; when ``@distributed`` defines a
call, torch's launcher is imported and the fork server that ranks start from is started too. The kernel is
never blocked: a cell that needs the same modules meanwhile simply waits for the import under way.
"""

from __future__ import annotations

import logging
import threading

log = logging.getLogger(__name__)

_started: set[str] = set()
_lock = threading.Lock()


def warm_up(*parts: str) -> None:
    """Start the background preparation of ``parts`` (``"tracking"``, ``"launcher"``), each once per process."""
    with _lock:
        todo = [part for part in parts if part not in _started]
        _started.update(todo)
    for part in todo:  # side by side: MLflow's import and torch's are independent
        threading.Thread(target=_prepare, args=(part,), name=f"air-warm-up-{part}", daemon=True).start()


def _prepare(part: str) -> None:
    try:
        _STEPS[part]()
    except Exception as exc:  # noqa: BLE001 - the call itself reports any real problem, with its context
        log.debug("Warming up %s failed: %s", part, exc)


def _tracking() -> None:
    from jupyter_air.tracking.store import client

    client()  # imports MLflow, creates or migrates the store under its lock


def _launcher() -> None:
    from jupyter_air.training.launch import start_fork_server

    start_fork_server()


_STEPS = {"tracking": _tracking, "launcher": _launcher}
