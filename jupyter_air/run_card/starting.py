"""The card of a call before its run exists: in the cell at once, saying what the call waits for.

A light static display (no widget, no import beyond IPython's display) shown within a fraction of a second of
the cell starting; the run card then takes its place in the same output (same display id). Text mode (outside
a kernel, or ``AIR_RUN_CARD=text``) shows nothing here: its first line comes with the run.
"""

from __future__ import annotations

import html
import time

from jupyter_air.format import duration
from jupyter_air.run_card.render import STATUS_COLOURS


class StartingCard:
    """What a call waits for until its run exists (the fork server, free nodes, the run itself)."""

    def __init__(self, mode: str, what: str = "starting"):
        self.handle = None
        self._started = time.monotonic()
        if mode == "widget":
            from IPython.display import display

            self.handle = display(self._bundle(what), raw=True, display_id=True)

    def waiting(self, what: str) -> None:
        """Say what the call waits for now."""
        if self.handle is not None:
            self.handle.update(self._bundle(what), raw=True)

    def failed(self, exc: BaseException) -> None:
        """The call ended before its run existed: say so, the error itself is the cell's."""
        if isinstance(exc, KeyboardInterrupt):
            self.waiting("interrupted before its run was created")
        else:
            self.waiting(f"did not start: {type(exc).__name__}")

    def _bundle(self, what: str) -> dict:
        waited = duration(time.monotonic() - self._started)
        text = f"jupyter_air call: {what} ({waited})"
        colour = STATUS_COLOURS["RUNNING"]
        page = (
            f'<div class="jp-Air-runcard-starting" style="border-left:3px solid {colour};padding:4px 8px">'
            f"<b>jupyter_air call</b> · {html.escape(what)} <span style='opacity:.7'>({waited})</span></div>"
        )
        return {"text/html": page, "text/plain": text}
