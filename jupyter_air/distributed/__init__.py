"""Distributed training from notebooks: ``@distributed`` and the error it raises."""

import sys
import types

from jupyter_air.distributed.api import distributed
from jupyter_air.distributed.errors import DistributedError

__all__ = ["distributed", "DistributedError"]


class _DecoratorModule(types.ModuleType):
    """Calling this package is calling :func:`distributed`.

    ``jupyter_air.distributed`` names both this package and the decorator; once the package is
    imported Python binds the package to that name, so ``from jupyter_air import distributed``
    may yield the package. Making it callable keeps ``@distributed(...)`` working either way.
    """

    def __call__(self, *args, **kwargs):
        return distributed(*args, **kwargs)


sys.modules[__name__].__class__ = _DecoratorModule
