"""Distributed training from notebooks: ``@distributed`` and the error it raises."""

from jupyter_air.training.api import distributed
from jupyter_air.training.cluster_call import release_nodes
from jupyter_air.training.errors import DistributedError, NodeLost

__all__ = ["distributed", "DistributedError", "NodeLost", "release_nodes"]
