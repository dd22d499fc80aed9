"""Distributed training from notebooks: ``@distributed``, ``attach`` to a remote call, the errors they raise."""

from jupyter_air.training.api import distributed
from jupyter_air.training.errors import DistributedError, NodeLost
from jupyter_air.training.kept import release_nodes
from jupyter_air.training.remote import attach

__all__ = ["attach", "distributed", "DistributedError", "NodeLost", "release_nodes"]
