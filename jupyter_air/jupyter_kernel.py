"""Whether this process is a Jupyter kernel, where cell outputs can be rich (HTML, widgets)."""

from __future__ import annotations

import sys


def in_jupyter_kernel() -> bool:
    """True inside a Jupyter kernel, where rich (HTML) outputs are shown."""
    shell = sys.modules.get("IPython") and sys.modules["IPython"].get_ipython()
    return bool(shell) and getattr(shell, "kernel", None) is not None
