"""Links that open a run or an experiment in the MLflow UI, for cell outputs, the ``air`` command and panels.

With the embedded store the links point at this Jupyter server's ``{base_url}jupyter-air/runs/<id>/open``
(and ``.../experiments/<id>/open``): plain authenticated paths that survive Jupyter's login (a ``#``
fragment would be lost on the way through ``/login?next=``) and redirect to the MLflow UI's page. With an
``http(s)://`` tracking server they point at that server's own UI.
"""

from __future__ import annotations

import glob
import json
import os
from dataclasses import dataclass
from urllib.parse import quote

import psutil

from jupyter_air.jupyter_kernel import in_jupyter_kernel
from jupyter_air.tracking.store import PROXY_PATH, client, is_local, is_remote, tracking_uri

#: The server's public address, where links printed by ``air`` and scripts start: set by an administrator, or
#: exported by the Jupyter server from ``c.JupyterAir.public_url`` to its kernels and terminals.
PUBLIC_URL_ENV = "AIR_PUBLIC_URL"
#: The server extension's namespace under the server's base URL.
NAMESPACE = "jupyter-air"


@dataclass(frozen=True)
class Links:
    """Where a run and its experiment open; ``origin`` says where the address came from (for people)."""

    run: str | None
    experiment: str | None
    origin: str | None


NO_LINKS = Links(None, None, None)


def open_path(kind: str, ident: str) -> str:
    """``jupyter-air/runs/<id>/open`` (or ``experiments``), relative to a server's base URL."""
    return f"{NAMESPACE}/{kind}/{quote(str(ident), safe='')}/open"


#: MLflow 3's UI opens in its GenAI view unless told otherwise; runs of jupyter_air are model training.
_MODEL_TRAINING_VIEW = "?workflowType=machine_learning"


def ui_fragment(experiment_id: str, run_id: str | None = None) -> str:
    """The MLflow UI's client-side route of an experiment or of one of its runs, in its model-training view."""
    fragment = f"#/experiments/{quote(str(experiment_id), safe='')}"
    if run_id:
        fragment += f"/runs/{quote(str(run_id), safe='')}"
    return fragment + _MODEL_TRAINING_VIEW


def links(experiment_id: str, run_id: str, for_page: bool | None = None, uri: str | None = None) -> Links:
    """Links to open the run and its experiment, or ``NO_LINKS`` when no UI serving this store is known.

    ``for_page``: shown in the Jupyter page itself (a kernel's cell output), where a path on the page's own
    origin works; otherwise (a terminal, a script) a full URL. Default: whether this is a Jupyter kernel.
    ``uri``: the run's tracking store (default this process's).
    """
    uri = uri or tracking_uri()
    if is_remote(uri):
        root = uri.rstrip("/")
        return Links(
            f"{root}/{ui_fragment(experiment_id, run_id)}",
            f"{root}/{ui_fragment(experiment_id)}",
            "the tracking server (MLFLOW_TRACKING_URI)",
        )
    if not is_local(uri):
        return NO_LINKS
    if for_page is None:
        for_page = in_jupyter_kernel()
    root, origin = _server_root(for_page, uri)
    if root is None:
        return NO_LINKS
    return Links(root + open_path("runs", run_id), root + open_path("experiments", experiment_id), origin)


def page_links(base_url: str, experiment_id: str, run_id: str) -> Links:
    """Links for this Jupyter server's own pages (its panels): the open routes under ``base_url`` for a local
    store, the tracking server's UI for a remote one, ``NO_LINKS`` for a store no UI is known for."""
    uri = tracking_uri()
    if is_remote(uri) or not is_local(uri):
        return links(experiment_id, run_id, for_page=True)
    origin = "this Jupyter server"
    return Links(base_url + open_path("runs", run_id), base_url + open_path("experiments", experiment_id), origin)


def ui_root(base_url: str) -> str | None:
    """Root of the MLflow UI that serves this server's store (ends in ``/``), None when none is known."""
    uri = tracking_uri()
    if is_remote(uri):
        return uri.rstrip("/") + "/"
    return base_url + PROXY_PATH if is_local(uri) else None


def public_url(environ=None) -> tuple[str | None, str | None]:
    """The public address of this user's Jupyter server (ending in ``/``) and where it came from, if known.

    ``$AIR_PUBLIC_URL`` first (an administrator's choice, or the server's ``c.JupyterAir.public_url``), then
    JupyterHub's public URL with the user's prefix.
    """
    env = os.environ if environ is None else environ
    if env.get(PUBLIC_URL_ENV):
        return env[PUBLIC_URL_ENV].rstrip("/") + "/", PUBLIC_URL_ENV
    hub = env.get("JUPYTERHUB_PUBLIC_URL") or env.get("JUPYTERHUB_HOST")
    prefix = env.get("JUPYTERHUB_SERVICE_PREFIX")
    if hub and hub.startswith(("http://", "https://")) and prefix:
        return hub.rstrip("/") + "/" + prefix.strip("/") + "/", "JupyterHub's public URL"
    return None, None


def _server_root(for_page: bool, uri: str) -> tuple[str | None, str | None]:
    """The base every link starts with, and where it came from: the page's base path for a kernel of the
    server, else the public URL, else the address in the server's runtime file."""
    servers = _running_servers()
    parent = _parent_server(servers)
    if parent is not None and not _same_store(int(parent["pid"]), uri):
        return None, None  # a kernel on another store than its server's UI: a link would open the wrong runs
    if for_page and parent is not None:
        return parent.get("base_url", "/"), "this Jupyter server"
    public, origin = public_url()
    if public is not None:
        return public, origin
    server = parent or next((s for s in servers if _same_store(int(s["pid"]), uri)), None)
    if server is None:
        return None, None
    return server["url"].rstrip("/") + "/", f"the Jupyter server's runtime file; set {PUBLIC_URL_ENV} to change it"


def ui_target(base_url: str, experiment_id: str, run_id: str | None = None) -> str:
    """Where an open link redirects: the MLflow UI's page (the proxied embedded UI or the tracking server)."""
    uri = tracking_uri()
    root = uri.rstrip("/") + "/" if is_remote(uri) else base_url + PROXY_PATH
    return root + ui_fragment(experiment_id, run_id)


def run_page(base_url: str, run_id: str) -> str | None:
    """The MLflow UI page of run ``run_id`` (its experiment looked up in the store), None if no such run.

    Blocking (it reads the store): call it off the event loop.
    """
    from mlflow.exceptions import MlflowException

    try:
        experiment_id = client().get_run(run_id).info.experiment_id
    except MlflowException:
        return None
    return ui_target(base_url, experiment_id, run_id)


def _running_servers() -> list[dict]:
    """Jupyter servers of this user that are alive, as described by their runtime files."""
    from jupyter_core.paths import jupyter_runtime_dir

    servers = []
    for path in glob.glob(os.path.join(jupyter_runtime_dir(), "jpserver-*.json")):
        try:
            with open(path, encoding="utf-8") as f:
                info = json.load(f)
        except (OSError, ValueError):
            continue
        if isinstance(info, dict) and psutil.pid_exists(int(info.get("pid", -1))):
            servers.append(info)
    return servers


def _parent_server(servers: list[dict]) -> dict | None:
    """The server among ``servers`` that this process (a kernel) descends from, if any."""
    by_pid = {int(s["pid"]): s for s in servers}
    try:
        ancestors = psutil.Process().parents()
    except psutil.Error:
        return None
    return next((by_pid[p.pid] for p in ancestors if p.pid in by_pid), None)


def _same_store(server_pid: int, uri: str) -> bool:
    """True when the Jupyter server ``server_pid`` serves the tracking store ``uri``."""
    try:
        server_env = psutil.Process(server_pid).environ()
    except psutil.Error:
        return True  # Unreadable (another user's process): assume the documented default.
    return tracking_uri(server_env) == uri
