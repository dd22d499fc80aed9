"""Distributed training from notebooks: ``@distributed``, ``attach`` to a remote call, ``release_nodes``, and the
errors they raise.

Each of these is imported from its module when first used, so that a process that needs one module of this package
(a rank, a node's actor, a remote call's runner in a job's supervisor) does not import the notebook's side (the
run card, IPython): importing ``jupyter_air.training.worker``, as every rank does, takes 0.07 s instead of 0.13 s
(medians of 5 fresh processes on 2 cores)."""

from __future__ import annotations

import importlib

#: The public names, and the module of this package that defines each.
_PUBLIC = {
    "attach": "remote",
    "distributed": "api",
    "DistributedError": "errors",
    "NodeLost": "errors",
    "release_nodes": "kept",
}
__all__ = sorted(_PUBLIC)


def __getattr__(name: str):
    if name in _PUBLIC:
        return getattr(importlib.import_module(f"{__name__}.{_PUBLIC[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
