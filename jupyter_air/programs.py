"""Which programs the processes jupyter_air starts find first: this Python environment's own.

A Jupyter server or a Ray node started from a virtual environment without activating it has the environment's
``python`` as ``sys.executable`` but not its ``bin/`` on ``PATH``: its kernels, terminals and workload commands
would find another ``python`` (without MLflow), no ``air`` and no ``torchrun``. So that folder comes first.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path


def environment_bin() -> str:
    """The folder of this interpreter's programs (``<venv>/bin``), as it was started (links not resolved)."""
    return str(Path(sys.executable).parent)


def path_first(path: str | None) -> str:
    """``path`` (a ``PATH`` value) with :func:`environment_bin` first, unless it already is."""
    own = environment_bin()
    folders = [f for f in (path or os.defpath).split(os.pathsep) if f and f != own]
    return os.pathsep.join([own, *folders])
