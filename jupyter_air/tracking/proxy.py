"""jupyter-server-proxy entry point serving the MLflow UI of the embedded store at ``{base_url}mlflow/``."""

from __future__ import annotations

import sys

from jupyter_air.tracking.store import air_home, default_artifact_location, tracking_uri

#: Seconds the proxy waits for a freshly started MLflow UI (it needs about 20 s on a small machine).
STARTUP_TIMEOUT_SECONDS = 120


def mlflow_server() -> dict:
    """The server-proxy spec: an MLflow UI on loopback, started on first use, reading this server's store.

    The Host header is rewritten to loopback so MLflow's DNS-rebinding check still guards the port
    itself, while requests that came through Jupyter (already authenticated by it) are served
    whatever host name the browser used.
    """
    return {
        "command": [
            sys.executable,
            "-m",
            "mlflow",
            "server",
            "--backend-store-uri",
            tracking_uri(),
            "--default-artifact-root",
            default_artifact_location(),
            "--host",
            "127.0.0.1",
            "--port",
            "{port}",
            "--workers",
            "1",
        ],
        # The UI needs no background job runner (a handful of extra processes used by GenAI features).
        "environment": {"AIR_HOME": str(air_home()), "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"},
        "timeout": STARTUP_TIMEOUT_SECONDS,
        "absolute_url": False,
        "request_headers_override": {"Host": "127.0.0.1:{port}", "Origin": ""},
        "new_browser_tab": True,
        "launcher_entry": {"enabled": True, "title": "MLflow"},
    }
