"""The resident MLflow server of an ``AIR_HOME``: ``python -m jupyter_air.tracking.ui_server SOCKET URI RECORD``.

It serves store ``URI`` on the Unix socket only, creates its files owner-only, keeps proxied artifact uploads
under ``AIR_HOME/mlartifacts``, and writes MLflow's request lines to ``$AIR_HOME/logs/mlflow-ui.log``. After
``$AIR_MLFLOW_IDLE_SECONDS`` without a request, once the Jupyter server that started it exited and nothing else holds
it, or on SIGTERM/SIGINT, it stops, removing its record and socket folder (see :mod:`~jupyter_air.tracking.resident`).
"""

from __future__ import annotations

import contextlib
import logging
import os
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
#: MLflow's tracking server app, served here as ``mlflow server`` serves it with uvicorn, in this process.
APP = "mlflow.server.fastapi_app:app"


class Activity(logging.Handler):
    """uvicorn's access log handler: marks each request in the activity file (at most once a second)."""

    def __init__(self, path: str):
        super().__init__()
        self.path = path
        self._last = 0.0

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
    marker = {"()": "jupyter_air.tracking.ui_server.Activity", "path": str(activity)}
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


def server_env(uri: str) -> dict[str, str]:
    """What ``mlflow server --backend-store-uri URI --artifacts-destination D --default-artifact-root D`` gives
    the process serving its app: this store, its model registry, artifacts (proxied uploads too) under AIR_HOME."""
    from mlflow.server import constants

    artifacts = default_artifact_location()
    return {
        constants.BACKEND_STORE_URI_ENV_VAR: uri,
        constants.REGISTRY_STORE_URI_ENV_VAR: uri,
        constants.ARTIFACT_ROOT_ENV_VAR: artifacts,
        constants.ARTIFACTS_DESTINATION_ENV_VAR: artifacts,
        constants.SERVE_ARTIFACTS_ENV_VAR: "true",
        "_MLFLOW_SGI_NAME": "uvicorn",
    }


def serve(uri: str, socket: Path, logging_config: dict) -> None:
    """MLflow's server app for store ``uri`` on the Unix socket only, one worker, in this process (``mlflow server``
    would import MLflow a second time in a uvicorn process of its own: about 3 CPU-seconds and 240 MiB more)."""
    os.environ.update(server_env(uri))
    import uvicorn

    uvicorn.run(APP, uds=str(socket), log_config=logging_config)


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
    for sig in (signal.SIGTERM, signal.SIGINT):  # before uvicorn serves, and again once it stopped for them
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
        serve(uri, socket, log_config(logs / LOG_NAME, activity))
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
