"""Distributed training from notebooks: ``@distributed`` and the error it raises."""

from jupyter_air.training.api import distributed
from jupyter_air.training.errors import DistributedError, NodeLost
from jupyter_air.training.kept import release_nodes

__all__ = ["distributed", "DistributedError", "NodeLost", "release_nodes"]
