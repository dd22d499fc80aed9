"""The embedded MLflow UI process: ``python -m jupyter_air.tracking.ui_server SOCKET``.

It serves this user's store on the Unix socket only, creates its files owner-only, and writes
MLflow's request lines to ``$AIR_HOME/logs/mlflow-ui.log`` (warnings and errors still reach the
Jupyter server's log).
"""

from __future__ import annotations

import json
import os
import shlex
import sys
from pathlib import Path

from jupyter_air.home import AirHomeError, UnusableDatabase, air_home, private_dir
from jupyter_air.tracking.store import default_artifact_location, prepare_store

LOG_NAME = "mlflow-ui.log"


def log_config(log_file: Path) -> dict:
    """uvicorn's logging: everything to ``log_file``; warnings and errors to stderr too."""
    plain = {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}
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
        },
        "loggers": {
            "uvicorn": {"handlers": ["file", "stderr"], "level": "INFO", "propagate": False},
            "uvicorn.access": {"handlers": ["file"], "level": "INFO", "propagate": False},
        },
        "root": {"handlers": ["file", "stderr"], "level": "INFO"},
    }


def server_args(uri: str, socket: Path, logging_config: Path) -> list[str]:
    """``mlflow server`` arguments: this store, artifacts under AIR_HOME, one worker, the Unix socket only."""
    uvicorn = f"--uds {shlex.quote(str(socket))} --log-config {shlex.quote(str(logging_config))}"
    return [
        "server",
        "--backend-store-uri",
        uri,
        "--default-artifact-root",
        default_artifact_location(),
        "--workers",
        "1",
        "--uvicorn-opts",
        uvicorn,
    ]


def main(argv: list[str]) -> None:
    socket = Path(argv[0])
    os.umask(0o077)
    try:
        uri = prepare_store()  # tables created or migrated under the lock shared with kernels and supervisors
    except (UnusableDatabase, AirHomeError) as err:  # one line in the Jupyter server's log, not a traceback
        raise SystemExit(f"jupyter_air: the MLflow UI cannot start: {err}") from None
    logs = private_dir(air_home() / "logs")
    config = socket.parent / "uvicorn-logging.json"
    config.write_text(json.dumps(log_config(logs / LOG_NAME)))
    from mlflow.cli import cli

    cli.main(args=server_args(uri, socket, config), prog_name="mlflow")


if __name__ == "__main__":
    main(sys.argv[1:])
