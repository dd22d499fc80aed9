"""Words and numbers shown to people, defined once for cell outputs and the command line."""

from __future__ import annotations

import re

#: Characters a terminal acts on instead of showing: C0 and C1 controls, DEL, and the bidirectional controls that
#: reorder what follows them.
_CONTROLS = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
_NAMED = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}


def duration(seconds: float | None) -> str:
    """``4.2s``, ``1m 05s``, ``2h 03m 04s``; ``-`` when unknown."""
    if seconds is None:
        return "-"
    if seconds < 60:
        return f"{seconds:.1f}s"
    minutes, secs = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h {minutes:02d}m {secs:02d}s" if hours else f"{minutes}m {secs:02d}s"


def byte_size(count: int) -> str:
    """``512 bytes``, ``2.5 KB``, ``1 MB``, ``82.3 MB``, ``1.2 GB`` (powers of 1000)."""
    if count < 1000:
        return f"{count} bytes"
    unit, scale = next((u, s) for u, s in (("KB", 1e3), ("MB", 1e6), ("GB", 1e9)) if count / s < 999.95 or u == "GB")
    return f"{count / scale:.1f}".removesuffix(".0") + f" {unit}"


def visible(text: str, keep: str = "") -> str:
    """``text`` with each control character written out as an escape (ESC as ``\\x1b``, a newline as ``\\n``), so a
    terminal shows it instead of acting on it (a clipboard write, a moved cursor); ``keep``: those left as they are
    (a log's tabs)."""

    def escape(found: re.Match) -> str:
        char = found.group()
        if char in keep:
            return char
        return _NAMED.get(char) or (f"\\x{ord(char):02x}" if ord(char) < 0x100 else f"\\u{ord(char):04x}")

    return _CONTROLS.sub(escape, text)
