"""Distributed training from notebooks: ``@distributed`` and the error it raises."""

from jupyter_air.training.api import distributed
from jupyter_air.training.errors import DistributedError

__all__ = ["distributed", "DistributedError"]
