"""The MLflow UI of the embedded store at ``{base_url}mlflow/``: the proxied server's spec and its launcher tile.

The UI listens on a Unix socket only, in a folder only the Jupyter user can enter (mode 0700): no
TCP port exists that another local user could reach or take first, and Jupyter's authentication is
the only way in.
"""

from __future__ import annotations

import os
import tempfile
import warnings
from pathlib import Path

from jupyter_air.home import air_home
from jupyter_air.tracking.store import PROXY_PATH

#: Seconds the proxy waits for a freshly started MLflow UI (it needs about 20 s on a small machine).
STARTUP_TIMEOUT_SECONDS = 120

#: The route's name under the server's base URL (``mlflow``).
PROXY_NAME = PROXY_PATH.strip("/")


def socket_path() -> Path:
    """Where the MLflow UI will listen: ``mlflow.sock`` in a new folder of mode 0700 (``mkdtemp``'s mode)."""
    return Path(tempfile.mkdtemp(prefix="jupyter-air-mlflow-")) / "mlflow.sock"


def mlflow_server(socket: Path) -> dict:
    """The server-proxy spec: the MLflow UI listening on ``socket`` (the process is ``ui_process.MlflowUi``'s).

    Host is set to loopback and Origin cleared, so MLflow's own host and origin checks accept
    requests that came through Jupyter whatever host name the browser used; those requests pass
    Jupyter's origin check instead (``proxy_handler``).
    """
    return {
        "unix_socket": str(socket),
        "absolute_url": False,
        "request_headers_override": {"Host": "localhost", "Origin": ""},
    }


def ui_environment() -> dict[str, str]:
    """Environment of the UI process: this server's AIR_HOME, and no GenAI background job runner (a handful of
    extra processes the UI does not need)."""
    return {**os.environ, "AIR_HOME": str(air_home()), "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"}


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
