"""How jupyter_air's errors show in IPython (their ``_render_traceback_``): the user's own frames and the root
cause, not jupyter_air's frames; the full traceback stays on the exception (``traceback.print_exception``)."""

from __future__ import annotations

import traceback
from pathlib import Path

#: Frames from these folders are jupyter_air's or the shell's own, not the user's ("<string>": methods that
#: dataclasses generate; contextlib: the ``with`` of a tracked cell).
_HIDDEN = (str(Path(__file__).resolve().parent), "/IPython/", "/ipykernel/", "<string>", "/contextlib.py")
#: A cell's line that IPython wrote for a cell magic (``%%air_run``): the whole cell as one escaped string.
_MAGIC_CALL = "get_ipython().run_cell_magic("
_HIDDEN_NOTE = (
    "(jupyter_air's own frames are hidden; `import sys, traceback; traceback.print_exception(sys.last_value)` "
    "shows every frame)"
)


def user_frames(tb) -> list[str]:
    """The formatted frames of ``tb`` that are the user's code (neither jupyter_air's nor IPython's)."""
    frames = [
        f
        for f in traceback.extract_tb(tb)
        if not any(part in f.filename for part in _HIDDEN) and not (f.line or "").startswith(_MAGIC_CALL)
    ]
    return traceback.format_list(frames)


def render(exc: BaseException, root_cause: str, details: str = "") -> list[str]:
    """IPython's lines for ``exc``: where the user's code made the call, the root cause, then ``details``."""
    frames = user_frames(exc.__traceback__)
    if exc.__cause__ is not None:  # raised for another (a Stop, for the interrupt it sent): where that one struck
        frames += user_frames(exc.__cause__.__traceback__)
    text = ("Traceback (most recent call last):\n" + "".join(frames) if frames else "") + root_cause + "\n"
    if details:
        text += "\n" + details.rstrip() + "\n"
    return (text + "\n" + _HIDDEN_NOTE).splitlines()
