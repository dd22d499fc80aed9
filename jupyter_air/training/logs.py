"""Copy every rank's log file to the cell output as it grows, each line prefixed ``[rank N]``."""

from __future__ import annotations

import codecs
import pathlib
import sys


class RankLogTail:
    """Follows ``rank_<N>.log`` files and prints their complete new lines."""

    def __init__(self, paths: list[pathlib.Path], stream=None):
        self.paths = paths
        self.stream = stream
        self._offsets = [0] * len(paths)
        self._partial = [""] * len(paths)
        # A read can end inside a multi-byte character (a progress bar's "█"): keep its bytes for the next read.
        self._decoders = [codecs.getincrementaldecoder("utf-8")(errors="replace") for _ in paths]

    def pump(self, final: bool = False) -> None:
        """Print whatever complete lines were added since the last call (everything when ``final``)."""
        out = self.stream or sys.stdout
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
            lines.extend(f"[rank {rank}] {line}" for line in complete)
        if lines:
            out.write("\n".join(lines) + "\n")
            out.flush()
