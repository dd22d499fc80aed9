"""jupyter_air: observable, reproducible GPU training from JupyterLab."""

from __future__ import annotations

try:
    from ._version import __version__
except ImportError:  # a source checkout that was never built
    __version__ = "0.0.0+unknown"

_LAZY = {
    "distributed": "jupyter_air.training.api",
    "DistributedError": "jupyter_air.training.errors",
    "attach": "jupyter_air.training.remote",
    "load_ipython_extension": "jupyter_air.magics",
    "unload_ipython_extension": "jupyter_air.magics",
}


def __getattr__(name: str):
    """Import heavy parts (torch, mlflow, IPython magics) only when first used."""
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'jupyter_air' has no attribute {name!r}")


def _jupyter_labextension_paths():
    return [{"src": "labextension", "dest": "jupyter-air"}]


def _jupyter_server_extension_points():
    # Lazy: the server extension (jupyter_server, tornado, its routes) takes 1.1 s to import, and every process that
    # imports one module of this package (a kernel, a rank, `air`) imports this file.
    from .server.extension import JupyterAir

    return [{"module": "jupyter_air", "app": JupyterAir}]
