"""Files another process appends to, read as they grow: the one definition of a line, its text, and one reader."""

from __future__ import annotations

from pathlib import Path

#: A line is the bytes up to "\n", for writers and readers alike. A "\r" (a progress bar redrawing itself) stays
#: inside its line.
NEWLINE = b"\n"


def split_lines(data: bytes) -> tuple[list[bytes], bytes]:
    """The complete lines in ``data`` (without their newline) and the unfinished rest."""
    *lines, rest = data.split(NEWLINE)
    return lines, rest


def line_text(line: bytes) -> str:
    """A line's text: UTF-8, each invalid byte shown as U+FFFD. Whole lines are decoded, so a read that ends
    inside a character (a progress bar's "█") never shows it broken."""
    return line.decode("utf-8", "replace")


class GrowingFile:
    """Hands out the complete lines appended to ``path`` since the last call (bytes, without their newline); the
    unfinished last line waits for its newline, or for a ``final`` read that reaches the end. A file that does not
    exist yet has no lines. Each read takes at most ``max_bytes`` (-1: all there is)."""

    def __init__(self, path: Path, max_bytes: int = -1):
        self.path = path
        self.max_bytes = max_bytes
        self._offset = 0
        self._rest = b""

    def lines(self, final: bool = False) -> list[bytes]:
        try:
            with open(self.path, "rb") as f:
                f.seek(self._offset)
                data = f.read(self.max_bytes)
        except FileNotFoundError:
            data = b""
        self._offset += len(data)
        lines, self._rest = split_lines(self._rest + data)
        at_end = self.max_bytes < 0 or len(data) < self.max_bytes
        if final and at_end and self._rest:
            lines.append(self._rest)
            self._rest = b""
        return lines
