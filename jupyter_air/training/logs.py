"""Follow every rank's log file as it grows, line by line, for the run card (or the console)."""

from __future__ import annotations

import pathlib

from jupyter_air.growing import GrowingFile, line_text


class RankLogTail:
    """Follows ``rank_<N>.log`` files and hands out their complete new lines."""

    def __init__(self, paths: list[pathlib.Path]):
        self.paths = paths
        self._files = [GrowingFile(path) for path in paths]

    def pump(self, final: bool = False) -> list[tuple[int, str]]:
        """``(rank, line)`` for every complete line added since the last call (everything when ``final``)."""
        return [(rank, line_text(line)) for rank, file in enumerate(self._files) for line in file.lines(final)]
