"""The resident MLflow server of an ``AIR_HOME``: ``python -m jupyter_air.tracking.ui_server SOCKET URI RECORD``.

It serves store ``URI`` on the Unix socket only, creates its files owner-only, keeps proxied artifact uploads
under ``AIR_HOME/mlartifacts``, and writes MLflow's request lines to ``$AIR_HOME/logs/mlflow-ui.log``. After
``$AIR_MLFLOW_IDLE_SECONDS`` without a request, once the Jupyter server that started it exited and nothing else holds
it, or on SIGTERM/SIGINT, it stops, removing its record and socket folder (see :mod:`~jupyter_air.tracking.resident`).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shlex
import shutil
import signal
import sys
import threading
import time
import traceback
from pathlib import Path

from jupyter_air.home import AirHomeError, UnusableDatabase, air_home, private_dir
from jupyter_air.residents import StarterWatch, holders_dir
from jupyter_air.tracking.resident import FOLDER_PREFIX, LOG_NAME, Server, forget, idle_seconds
from jupyter_air.tracking.store import default_artifact_location, prepare_store

#: In the socket folder: touched (at most once a second) by every request, read by the idle watch.
ACTIVITY_NAME = "activity"
_PR_SET_PDEATHSIG = 1


class Activity(logging.Handler):
    """uvicorn's access log handler in the serving process: marks each request in the activity file, and makes
    that process end with the one that started it (parent-death signal), so it never outlives the record."""

    def __init__(self, path: str, parent: int):
        super().__init__()
        self.path = path
        self._last = 0.0
        import ctypes

        try:
            ctypes.CDLL(None).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
        except AttributeError:  # not Linux: the idle stop and the record's clean-up still apply
            return
        if os.getppid() != parent:  # the parent died before the signal was asked for
            os.kill(os.getpid(), signal.SIGTERM)

    def emit(self, record: logging.LogRecord) -> None:
        now = time.monotonic()
        if now - self._last >= 1.0:
            self._last = now
            try:
                os.utime(self.path)
            except FileNotFoundError:
                open(self.path, "a").close()


def log_config(log_file: Path, activity: Path) -> dict:
    """uvicorn's logging: everything to ``log_file``; warnings and errors to stderr too; requests also mark
    ``activity``."""
    plain = {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}
    marker = {"()": "jupyter_air.tracking.ui_server.Activity", "path": str(activity), "parent": os.getpid()}
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {"plain": plain},
        "handlers": {
            "file": {"class": "logging.FileHandler", "filename": str(log_file), "formatter": "plain"},
            "stderr": {
                "class": "logging.StreamHandler",
                "stream": "ext://sys.stderr",
                "level": "WARNING",
                "formatter": "plain",
            },
            "activity": marker,
        },
        "loggers": {
            "uvicorn": {"handlers": ["file", "stderr"], "level": "INFO", "propagate": False},
            "uvicorn.access": {"handlers": ["file", "activity"], "level": "INFO", "propagate": False},
        },
        "root": {"handlers": ["file", "stderr"], "level": "INFO"},
    }


def server_args(uri: str, socket: Path, logging_config: Path) -> list[str]:
    """``mlflow server`` arguments: this store, artifacts (proxied uploads too) under AIR_HOME, one worker,
    the Unix socket only."""
    uvicorn = f"--uds {shlex.quote(str(socket))} --log-config {shlex.quote(str(logging_config))}"
    return [
        "server",
        "--backend-store-uri",
        uri,
        "--default-artifact-root",
        default_artifact_location(),
        "--artifacts-destination",
        default_artifact_location(),
        "--workers",
        "1",
        "--uvicorn-opts",
        uvicorn,
    ]


def _watch_idle(socket: Path, activity: Path, idle: float, record: Path) -> None:
    """Once this server answers, stop it when nothing asked it anything for ``idle`` seconds, or when the Jupyter
    server that started it has exited and no other process holds it (``residents.StarterWatch``): its record goes
    first, so no new client finds it while it stops."""
    itself = Server(os.getpid(), None, str(socket), "")
    while not itself.answers(timeout=5.0):
        time.sleep(0.5)
    activity.touch()
    starter = StarterWatch(holders_dir(record))
    while True:
        time.sleep(1.0)
        try:
            last = activity.stat().st_mtime
        except FileNotFoundError:
            continue
        if starter.should_stop() or time.time() - last >= idle:
            with contextlib.suppress(OSError):  # AIR_HOME may be gone
                forget(record, os.getpid())
            os.kill(os.getpid(), signal.SIGTERM)
            return
        starter.say_kept()


def _stop(signum, _frame) -> None:
    raise SystemExit(128 + signum)


def main(argv: list[str]) -> None:
    socket, uri, record = Path(argv[0]), argv[1], Path(argv[2])
    folder = socket.parent
    if not folder.name.startswith(FOLDER_PREFIX):  # it is removed when the server stops: only a folder of its own
        sys.exit(
            f"jupyter_air: {socket} is not in a socket folder made for the MLflow UI ({FOLDER_PREFIX}*); start "
            "it with jupyter_air.tracking.resident.ensure"
        )
    for sig in (signal.SIGTERM, signal.SIGINT):  # until MLflow forwards them to its server process
        signal.signal(sig, _stop)
    os.umask(0o077)
    activity = folder / ACTIVITY_NAME
    code = 0
    try:
        watch = threading.Thread(target=_watch_idle, args=(socket, activity, idle_seconds(), record), daemon=True)
        watch.start()
        try:
            prepare_store(uri)  # tables created or migrated under the lock shared with kernels and supervisors
        except (UnusableDatabase, AirHomeError) as err:  # one line in the Jupyter server's log, not a traceback
            raise SystemExit(f"jupyter_air: the MLflow UI cannot start: {err}") from None
        logs = private_dir(air_home() / "logs")
        config = folder / "uvicorn-logging.json"
        config.write_text(json.dumps(log_config(logs / LOG_NAME, activity)))
        from mlflow.cli import cli

        cli.main(args=server_args(uri, socket, config), prog_name="mlflow")
    except SystemExit as exc:
        if isinstance(exc.code, str):  # why it cannot start, in one line
            print(exc.code, file=sys.stderr)
        code = exc.code if isinstance(exc.code, int) else (1 if exc.code else 0)
    except BaseException:  # noqa: BLE001 - told in its log; the record and folder must go whatever happened
        traceback.print_exc()
        code = 1
    finally:
        with contextlib.suppress(OSError):  # AIR_HOME may be gone
            forget(record, os.getpid())
        shutil.rmtree(folder, ignore_errors=True)
        sys.stderr.flush()
        os._exit(code)  # MLflow's own threads must not keep a stopped server alive


if __name__ == "__main__":
    main(sys.argv[1:])
