"""Follow every rank's log file as it grows, line by line, for the run card (or the console)."""

from __future__ import annotations

import codecs
import pathlib


class RankLogTail:
    """Follows ``rank_<N>.log`` files and hands out their complete new lines."""

    def __init__(self, paths: list[pathlib.Path]):
        self.paths = paths
        self._offsets = [0] * len(paths)
        self._partial = [""] * len(paths)
        # A read can end inside a multi-byte character (a progress bar's "█"): keep its bytes for the next read.
        self._decoders = [codecs.getincrementaldecoder("utf-8")(errors="replace") for _ in paths]

    def pump(self, final: bool = False) -> list[tuple[int, str]]:
        """``(rank, line)`` for every complete line added since the last call (everything when ``final``)."""
        lines = []
        for rank, path in enumerate(self.paths):
            try:
                with open(path, "rb") as f:
                    f.seek(self._offsets[rank])
                    chunk = f.read()
            except FileNotFoundError:
                continue
            self._offsets[rank] += len(chunk)
            text = self._partial[rank] + self._decoders[rank].decode(chunk, final=final)
            *complete, self._partial[rank] = text.split("\n")
            if final and self._partial[rank]:
                complete.append(self._partial[rank])
                self._partial[rank] = ""
            lines.extend((rank, line) for line in complete)
        return lines
