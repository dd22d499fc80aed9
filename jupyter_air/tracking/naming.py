"""The default experiment of a notebook, one rule for the runs it creates and the panel that lists them."""

from __future__ import annotations

import getpass
import os
import pathlib
import socket
from collections.abc import Mapping


def run_user(environ: Mapping[str, str] | None = None) -> str:
    """Who a run belongs to: ``$JUPYTERHUB_USER`` or the login name."""
    env = os.environ if environ is None else environ
    return env.get("JUPYTERHUB_USER") or getpass.getuser()


def default_experiment_name(source: str, environ: Mapping[str, str] | None = None) -> str:
    """``/Users/<user>/<stem of source>`` for a notebook or script path, like MLflow's notebook experiments."""
    return f"/Users/{run_user(environ)}/{pathlib.PurePosixPath(source).stem or source}"


#: Tag naming the node (host) a run was started on; runs without it were recorded before it existed.
NODE_TAG = "air.node"


def node_name() -> str:
    """This node's name, as the GPU panel shows it."""
    return socket.gethostname()
