"""Words and numbers shown to people, defined once for cell outputs and the command line."""

from __future__ import annotations


def duration(seconds: float | None) -> str:
    """``4.2s``, ``1m 05s``, ``2h 03m 04s``; ``-`` when unknown."""
    if seconds is None:
        return "-"
    if seconds < 60:
        return f"{seconds:.1f}s"
    minutes, secs = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h {minutes:02d}m {secs:02d}s" if hours else f"{minutes}m {secs:02d}s"
