"""Per-node output of each attempt: written line by line with timestamps, read back by tail, follow and download."""

from __future__ import annotations

import os
import time
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Optional

OUTPUT = "output.log"
#: One epoch-millisecond timestamp per line of output.log, in the same order.
TIMESTAMPS = "output.ts"
#: Longest line kept as one record; longer output is split.
MAX_LINE_BYTES = 1 << 16


def node_dir(job_dir: Path, attempt: int, node: int) -> Path:
    return job_dir / "logs" / f"attempt_{attempt}" / f"node_{node}"


@dataclass
class LogLine:
    """One output line; `ts` is epoch milliseconds when the supervisor read it (None if not recorded)."""

    ts: Optional[int]
    line: str


class LogWriter:
    """Appends each line to output.log and its timestamp to output.ts, flushed at once (nothing lost on a crash)."""

    def __init__(self, directory: Path):
        directory.mkdir(parents=True, exist_ok=True)
        self._out = open(directory / OUTPUT, "ab", buffering=0)
        self._ts = open(directory / TIMESTAMPS, "ab", buffering=0)

    def write(self, line: bytes) -> None:
        if not line.endswith(b"\n"):
            line += b"\n"
        self._out.write(line)
        self._ts.write(b"%d\n" % int(time.time() * 1000))

    def close(self) -> None:
        self._out.close()
        self._ts.close()


class LogCursor:
    """Reads the lines added since the last call; a line is given out once both files hold it."""

    def __init__(self, directory: Path):
        self.directory = directory
        self._pos = {OUTPUT: 0, TIMESTAMPS: 0}
        self._pending: dict[str, deque[bytes]] = {OUTPUT: deque(), TIMESTAMPS: deque()}

    def _read(self, name: str) -> None:
        try:
            with open(self.directory / name, "rb") as f:
                f.seek(self._pos[name])
                data = f.read()
        except FileNotFoundError:
            return
        end = data.rfind(b"\n") + 1
        self._pos[name] += end
        self._pending[name].extend(data[:end].splitlines())

    def read(self, final: bool = False) -> list[LogLine]:
        """New complete lines; with `final`, also lines whose timestamp never got written."""
        self._read(OUTPUT)
        self._read(TIMESTAMPS)
        out, ts = self._pending[OUTPUT], self._pending[TIMESTAMPS]
        lines = []
        while out and (ts or final):
            stamp = ts.popleft() if ts else None
            lines.append(LogLine(int(stamp) if stamp else None, out.popleft().decode("utf-8", "replace")))
        return lines


def tail(directory: Path, count: Optional[int]) -> list[LogLine]:
    """The last `count` lines (all when None), streaming through the files."""
    keep: deque[LogLine] = deque(maxlen=count)
    for line in _iter_lines(directory):
        keep.append(line)
    return list(keep)


def _iter_lines(directory: Path) -> Iterator[LogLine]:
    try:
        out = open(directory / OUTPUT, "rb")
    except FileNotFoundError:
        return
    with out:
        try:
            ts = open(directory / TIMESTAMPS, "rb")
        except FileNotFoundError:
            ts = None
        try:
            for raw in out:
                stamp = ts.readline().strip() if ts else b""
                yield LogLine(int(stamp) if stamp else None, raw.rstrip(b"\n").decode("utf-8", "replace"))
        finally:
            if ts:
                ts.close()


class UnsafePath(Exception):
    """A download target would land outside the chosen folder."""


def download(source: Path, dest_root: Path, parts: tuple[str, ...]) -> Path:
    """Copy `source` to `dest_root/<parts...>/output.log` without following links or leaving `dest_root`."""
    root = dest_root.expanduser().resolve()
    root.mkdir(parents=True, exist_ok=True)
    folder = root
    for part in parts:
        if part in ("", ".", "..") or "/" in part or os.sep in part:
            raise UnsafePath(f"refusing path component {part!r}")
        folder = folder / part
        if folder.is_symlink():
            raise UnsafePath(f"{folder} is a symbolic link; refusing to write through it")
        folder.mkdir(exist_ok=True)
    target = folder / OUTPUT
    if not target.resolve().is_relative_to(root) or target.is_symlink():
        raise UnsafePath(f"{target} leaves {root}; refusing to write it")
    fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o644)
    with os.fdopen(fd, "wb") as dst:
        try:
            with open(source / OUTPUT, "rb") as src:
                while chunk := src.read(1 << 20):
                    dst.write(chunk)
        except FileNotFoundError:
            pass
    return target
