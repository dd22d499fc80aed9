"""The MLflow UI of the embedded store at ``{base_url}mlflow/``: the proxied server's spec and its launcher tile."""

from __future__ import annotations

import sys
import warnings

from jupyter_air.tracking.store import PROXY_PATH, air_home, default_artifact_location, tracking_uri

#: Seconds the proxy waits for a freshly started MLflow UI (it needs about 20 s on a small machine).
STARTUP_TIMEOUT_SECONDS = 120

#: The route's name under the server's base URL (``mlflow``).
PROXY_NAME = PROXY_PATH.strip("/")


def mlflow_server() -> dict:
    """The server-proxy spec: an MLflow UI on loopback, started on first use, reading this server's store.

    Host is rewritten to loopback and Origin cleared, so MLflow's own host and origin checks, which
    still guard its port, accept requests that came through Jupyter whatever host name the browser
    used. Those requests pass Jupyter's origin check instead (``proxy_handler``).
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
    }


def mlflow_launcher() -> dict:
    """The jupyter-server-proxy entry point: only the MLflow launcher tile, opening ``{base_url}mlflow/``.

    The route itself belongs to the jupyter_air server extension, whose handler checks the origin of
    every request that changes something. A spec without a command gets no handler of its own, so
    jupyter-server-proxy would warn that it lacks one at every start: that warning is silenced here.
    """
    warnings.filterwarnings(
        "ignore", message=f"Server proxy {PROXY_NAME} does not have a command", category=UserWarning
    )
    return {"launcher_entry": {"title": "MLflow", "path_info": PROXY_PATH}, "new_browser_tab": True}
