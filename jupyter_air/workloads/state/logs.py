"""Per-node output of each attempt: written line by line with timestamps, read back by tail, follow and download."""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
import time
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from jupyter_air.error_kinds import BAD_INPUT
from jupyter_air.growing import NEWLINE, GrowingFile, line_text
from jupyter_air.home import DIR_MODE, FILE_MODE, open_private, private_dir

OUTPUT = "output.log"
#: One epoch-millisecond timestamp per line of output.log, in the same order.
TIMESTAMPS = "output.ts"
#: Longest line kept as one record; longer output is split.
MAX_LINE_BYTES = 1 << 16
#: Most bytes one chunk of a log holds; more than a line (MAX_LINE_BYTES), so a chunk always ends a line.
CHUNK_BYTES = 1 << 18


def node_dir(job_dir: Path, attempt: int, node: int) -> Path:
    return job_dir / "logs" / f"attempt_{attempt}" / f"node_{node}"


@dataclass
class LogLine:
    """One output line; `ts` is epoch milliseconds when the supervisor read it (None if not recorded)."""

    ts: int | None
    line: str


class LogWriter:
    """Appends each line to output.log and its timestamp to output.ts, flushed at once (nothing lost on a crash)."""

    def __init__(self, directory: Path):
        private_dir(directory)
        self._out = open_private(directory / OUTPUT, "ab", buffering=0)
        self._ts = open_private(directory / TIMESTAMPS, "ab", buffering=0)

    def write(self, line: bytes) -> None:
        """Write one line (without its newline); raises OSError when the disk refuses it."""
        self._out.write(line + NEWLINE)
        self._ts.write(b"%d\n" % int(time.time() * 1000))

    def close(self) -> None:
        for stream in (self._out, self._ts):
            with contextlib.suppress(OSError):  # a full disk, already reported by write()
                stream.close()


class LogCursor:
    """Reads the lines added since the last call; a line is given out once both files hold it. Each read takes at
    most ``CHUNK_BYTES`` of a file (a follower of a big log catches up over a few reads, never holding it whole)."""

    def __init__(self, directory: Path):
        self.directory = directory
        # A chunk holds a whole line: a written line is at most MAX_LINE_BYTES.
        self._files = {name: GrowingFile(directory / name, CHUNK_BYTES) for name in (OUTPUT, TIMESTAMPS)}
        self._pending: dict[str, deque[bytes]] = {OUTPUT: deque(), TIMESTAMPS: deque()}

    def _read(self, name: str, final: bool) -> bool:
        """Take the complete lines of the next chunk of ``name``; whether there were any."""
        lines = self._files[name].lines(final)
        self._pending[name].extend(lines)
        return bool(lines)

    def read(self, final: bool = False) -> list[LogLine]:
        """New complete lines; with `final`, every line left, also those whose timestamp never got written (and an
        unfinished last line; an unfinished timestamp is not one)."""
        while (self._read(OUTPUT, final) | self._read(TIMESTAMPS, False)) and final:
            pass
        out, ts = self._pending[OUTPUT], self._pending[TIMESTAMPS]
        lines = []
        while out and (ts or final):
            stamp = ts.popleft() if ts else None
            lines.append(LogLine(int(stamp) if stamp else None, line_text(out.popleft())))
        return lines


def tail(directory: Path, count: int | None) -> list[LogLine]:
    """The last `count` lines (all when None), streaming through the files."""
    keep: deque[LogLine] = deque(maxlen=count)
    for line in _iter_lines(directory):
        keep.append(line)
    return list(keep)


def _iter_lines(directory: Path) -> Iterator[LogLine]:
    if not (directory / OUTPUT).exists():
        return
    with contextlib.ExitStack() as files:
        out = files.enter_context(open(directory / OUTPUT, "rb"))
        ts = files.enter_context(open(directory / TIMESTAMPS, "rb")) if (directory / TIMESTAMPS).exists() else None
        for raw in out:  # a binary file iterates over "\n"-terminated lines, like split_lines
            stamp = ts.readline().strip() if ts else b""
            yield LogLine(int(stamp) if stamp else None, line_text(raw.removesuffix(NEWLINE)))


class BadOffset(ValueError):
    """An offset that is not a place to read a log from; the message says which offsets are."""

    kind = BAD_INPUT


@dataclass
class LogChunk:
    """Text of the log from an offset, and the offset to ask for next."""

    text: str
    next_offset: int
    size_bytes: int


def read_chunk(directory: Path, offset: int, finished: bool, max_bytes: int = CHUNK_BYTES) -> LogChunk:
    """The whole lines of ``output.log`` from byte ``offset`` (at most ``max_bytes``), never a cut UTF-8
    character; the unfinished last line only once the log is ``finished`` (its attempt ended). A line longer
    than ``max_bytes`` comes in pieces cut between characters."""
    try:
        log = open(directory / OUTPUT, "rb")  # noqa: SIM115 - closed below; FileNotFoundError handled first
    except FileNotFoundError:
        if offset:
            raise BadOffset(f"offset {offset} is past the end of the log (0 bytes, nothing written yet)") from None
        return LogChunk("", 0, 0)
    with log:
        size = os.fstat(log.fileno()).st_size
        if offset > size:
            raise BadOffset(
                f"offset {offset} is past the end of the log ({size} bytes); use 0 to read it from the start"
            )
        log.seek(offset)
        data = log.read(min(max_bytes, size - offset))
    if data and _is_continuation(data[0]):
        raise BadOffset(f"offset {offset} is inside a UTF-8 character; use 0 or the next_offset of an earlier answer")
    if finished and offset + len(data) == size:
        cut = len(data)
    else:
        cut = data.rfind(NEWLINE) + 1
        if cut == 0 and len(data) == max_bytes:
            cut = _character_boundary(data)
    return LogChunk(data[:cut].decode("utf-8", "replace"), offset + cut, size)  # cut between characters


def _is_continuation(byte: int) -> bool:
    return byte & 0xC0 == 0x80


def _character_boundary(data: bytes) -> int:
    """The length of the longest prefix of ``data`` that does not end inside a UTF-8 character."""
    for back in range(1, min(4, len(data)) + 1):
        byte = data[-back]
        if not _is_continuation(byte):
            needed = 1 if byte < 0x80 else 2 if byte >> 5 == 0b110 else 3 if byte >> 4 == 0b1110 else 4
            return len(data) - back if back < needed else len(data)
    return len(data)


class UnsafePath(Exception):
    """A download target would land outside the chosen folder, or where another user could read or replace it."""


def download(source: Path, dest_root: Path, parts: tuple[str, ...]) -> Path:
    """Copy ``source``'s output.log to ``dest_root/<parts...>/output.log``, safe from other local users.

    The path is walked from ``/`` one folder at a time without following links; every folder written into must
    belong to this user (or root) and not be writable by others (unless sticky, as /tmp); the file is created
    new (O_EXCL, 0600) and renamed over an earlier download, never opened where it stands.
    """
    root = dest_root.expanduser().resolve()
    for part in parts:
        if part in ("", ".", "..") or "/" in part or os.sep in part:
            raise UnsafePath(f"refusing path component {part!r}")
    folder = os.open("/", os.O_RDONLY | os.O_DIRECTORY)
    try:
        path = Path("/")
        for index, name in enumerate((*root.parts[1:], *parts)):
            path = path / name
            child = _enter(folder, name, path, checked=index >= len(root.parts) - 2)
            os.close(folder)
            folder = child
        _write_new(folder, source / OUTPUT)
    finally:
        os.close(folder)
    return path / OUTPUT


def _enter(parent: int, name: str, path: Path, checked: bool) -> int:
    """Open folder ``name`` in ``parent``, created 0700 if missing, without following a link; a folder that is
    ``checked`` (written into) must belong to this user or root and not be writable by others."""
    try:
        try:
            fd = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=parent)
        except FileNotFoundError:
            with contextlib.suppress(FileExistsError):
                os.mkdir(name, DIR_MODE, dir_fd=parent)
            fd = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=parent)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR) and os.path.islink(path):
            raise UnsafePath(f"{path} is a symbolic link; refusing to write through it") from None
        raise
    if checked:
        info = os.fstat(fd)
        if info.st_uid not in (os.geteuid(), 0):
            os.close(fd)
            raise UnsafePath(f"{path} belongs to another user (uid {info.st_uid}); choose a folder of your own")
        if info.st_mode & 0o022 and not info.st_mode & stat.S_ISVTX:
            os.close(fd)
            raise UnsafePath(
                f"{path} can be written by other users (mode {stat.S_IMODE(info.st_mode):o}); "
                f"`chmod go-w {path}` or choose a folder of your own"
            )
    return fd


def _write_new(folder: int, source: Path) -> None:
    """Write a copy of ``source`` as output.log in ``folder``: a new 0600 file, renamed into place."""
    staging = f".{OUTPUT}.{secrets.token_hex(6)}"
    fd = os.open(staging, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, FILE_MODE, dir_fd=folder)
    try:
        with os.fdopen(fd, "wb") as dst, contextlib.suppress(FileNotFoundError), open(source, "rb") as src:
            while chunk := src.read(1 << 20):
                dst.write(chunk)
        os.replace(staging, OUTPUT, src_dir_fd=folder, dst_dir_fd=folder)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(staging, dir_fd=folder)
        raise
