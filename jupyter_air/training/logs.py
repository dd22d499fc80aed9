"""Copy every rank's log file to the cell output as it grows, each line prefixed ``[rank N]`` (``[node n rank r]``)."""

from __future__ import annotations

import codecs
import pathlib
import sys


class RankLogTail:
    """Follows log files and prints their complete new lines, each after its file's prefix (``rank 3``)."""

    def __init__(self, files: list[tuple[str, pathlib.Path]], stream=None):
        self.prefixes = [prefix for prefix, _ in files]
        self.paths = [path for _, path in files]
        self.stream = stream
        self._offsets = [0] * len(files)
        self._partial = [""] * len(files)
        # A read can end inside a multi-byte character (a progress bar's "█"): keep its bytes for the next read.
        self._decoders = [codecs.getincrementaldecoder("utf-8")(errors="replace") for _ in files]

    def pump(self, final: bool = False) -> None:
        """Print whatever complete lines were added since the last call (everything when ``final``)."""
        out = self.stream or sys.stdout
        lines = []
        for index, path in enumerate(self.paths):
            try:
                with open(path, "rb") as f:
                    f.seek(self._offsets[index])
                    chunk = f.read()
            except FileNotFoundError:
                continue
            self._offsets[index] += len(chunk)
            text = self._partial[index] + self._decoders[index].decode(chunk, final=final)
            *complete, self._partial[index] = text.split("\n")
            if final and self._partial[index]:
                complete.append(self._partial[index])
                self._partial[index] = ""
            lines.extend(f"[{self.prefixes[index]}] {line}" for line in complete)
        if lines:
            out.write("\n".join(lines) + "\n")
            out.flush()
