"""The MLflow UI of the embedded store at ``{base_url}mlflow/``: the proxied server's spec and its launcher tile.

The UI is AIR_HOME's resident MLflow server (``resident``): it listens on a Unix socket only, in a folder only
the Jupyter user can enter (mode 0700): no TCP port exists that another local user could reach or take first,
and Jupyter's authentication is the only way in.
"""

from __future__ import annotations

import warnings

from jupyter_air.tracking.resident import SOCKET_NAME
from jupyter_air.tracking.store import PROXY_PATH

#: The route's name under the server's base URL (``mlflow``).
PROXY_NAME = PROXY_PATH.strip("/")


def mlflow_server() -> dict:
    """The server-proxy spec: the MLflow UI on a Unix socket (the resident server's, set for each request by
    ``proxy_handler``, as the server may have been started again elsewhere since).

    Host is set to loopback and Origin cleared, so MLflow's own host and origin checks accept
    requests that came through Jupyter whatever host name the browser used; those requests pass
    Jupyter's origin check instead (``proxy_handler``).
    """
    return {
        "unix_socket": SOCKET_NAME,
        "absolute_url": False,
        "request_headers_override": {"Host": "localhost", "Origin": ""},
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
