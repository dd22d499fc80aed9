"""``AIR_HOME``, where jupyter_air keeps its state: owner-only folders (0700) and files (0600), a file lock, and
what to say when a database there is damaged or its disk is full."""

from __future__ import annotations

import contextlib
import errno
import fcntl
import logging
import os
import pathlib
import re
import stat
from collections.abc import Iterator, Mapping

from jupyter_air.error_kinds import UNUSABLE_HOME, UNUSABLE_STATE
from jupyter_air.owned import NotOurs, check_entries, check_path

log = logging.getLogger(__name__)

#: The folder of jupyter_air's state (default ``~/.jupyter_air``): the job database and logs, the embedded MLflow
#: store, the Stop requests of live runs. The Jupyter server, its kernels and ``air`` must share it. It, and each
#: file in it, must be yours and not writable by others, as must each folder above it (root's, or sticky as /tmp,
#: may be): otherwise it is refused, saying why.
HOME_ENV = "AIR_HOME"
DIR_MODE = 0o700
FILE_MODE = 0o600
_warned: set[pathlib.Path] = set()


#: errno values of a write that found no room: the disk, or the user's quota, is full.
_FULL_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT})
#: How SQLite (and the libraries over it) say the same, and how they say a file is no database of theirs.
_FULL_WORDS = ("database or disk is full", "No space left on device", "Disk quota exceeded")
_DAMAGED_WORDS = ("file is not a database", "database disk image is malformed")
#: Free bytes under which a vague "disk I/O error" of SQLite is taken for a full disk (it cannot grow its files).
_LOW_SPACE_BYTES = 1 << 20


class AirHomeError(OSError):
    kind = UNUSABLE_HOME
    """``AIR_HOME`` cannot be created or used; the message says which folder and how to fix it."""


class UnusableDatabase(RuntimeError):
    kind = UNUSABLE_STATE
    """A database of jupyter_air's state cannot be used (damaged, or its disk is full); the message names the
    file and what to do."""


def _given(environ: Mapping[str, str] | None) -> pathlib.Path:
    env = os.environ if environ is None else environ
    return pathlib.Path(env.get(HOME_ENV) or "~/.jupyter_air").expanduser().absolute()


def air_home_path(environ: Mapping[str, str] | None = None) -> pathlib.Path:
    """Where ``AIR_HOME`` is (``$AIR_HOME`` or ``~/.jupyter_air``), without creating it."""
    return _given(environ).resolve()


def checked_air_home(environ: Mapping[str, str] | None = None) -> pathlib.Path:
    """:func:`air_home_path`, refused (``AirHomeError``, nothing created) when another user could plant or swap
    state there: it, a folder above it or an entry in it is another user's (root's folders above it excepted), or
    writable by others (a folder above it with the sticky bit, as /tmp, excepted)."""
    home = air_home_path(environ)
    try:
        check_path(_given(environ))
        check_entries(home)
    except NotOurs as err:
        raise AirHomeError(
            f"AIR_HOME={home} cannot be used: {err.what}, so another user could plant or swap jupyter_air's state "
            f"there (a job database whose schedules would run as you). To fix: {err.fix}, or set AIR_HOME to a "
            "private folder of yours, e.g. `export AIR_HOME=~/.jupyter_air`."
        ) from None
    return home


def air_home(environ: Mapping[str, str] | None = None) -> pathlib.Path:
    """``$AIR_HOME`` or ``~/.jupyter_air``, checked (:func:`checked_air_home`), then created owner-only if missing
    (a shared one is warned about once)."""
    home = checked_air_home(environ)
    try:
        private_dir(home)
    except OSError as exc:
        what = "is not a folder" if isinstance(exc, NotADirectoryError) and home.exists() else "cannot be created"
        raise AirHomeError(
            f"AIR_HOME={home} {what}: {exc.strerror or exc}. "
            "Set AIR_HOME to a folder you can write, e.g. `export AIR_HOME=~/.jupyter_air`."
        ) from None
    _warn_if_shared(home)
    return home


def private_dir(path: pathlib.Path) -> pathlib.Path:
    """Create ``path`` and its missing parents, each with mode 0700; returns it (NotADirectoryError when one of
    them is a file)."""
    missing = [p for p in (path, *path.parents) if not p.is_dir()]
    for folder in reversed(missing):
        with contextlib.suppress(FileExistsError):
            folder.mkdir(mode=DIR_MODE)
            folder.chmod(DIR_MODE)  # mkdir's mode is masked by the umask
        if not folder.is_dir():
            raise NotADirectoryError(errno.ENOTDIR, "a file is in the way", str(folder))
    return path


def private_file(path: pathlib.Path) -> pathlib.Path:
    """Create ``path`` empty with mode 0600 unless it exists (so a database made in it stays private)."""
    with contextlib.suppress(FileExistsError):
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE))
    return path


def open_private(path: pathlib.Path, mode: str = "ab", buffering: int = -1):
    """Open ``path`` for appending (binary by default), creating it with mode 0600; never through a link."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW
    return open(os.open(path, flags, FILE_MODE), mode, buffering=buffering)


@contextlib.contextmanager
def file_lock(path: pathlib.Path) -> Iterator[None]:
    """Hold an exclusive lock on ``path`` (created 0600) across processes for the block."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, FILE_MODE)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _warn_if_shared(home: pathlib.Path) -> None:
    if home in _warned:
        return
    _warned.add(home)
    mode = stat.S_IMODE(home.stat().st_mode)
    if mode & 0o077:
        log.warning(
            "AIR_HOME %s can be read by other users (mode %o) and holds job environments and runs: "
            "run `chmod 700 %s` to make it private.",
            home,
            mode,
            home,
        )


def _chain(exc: BaseException | None) -> Iterator[BaseException]:
    """``exc`` and the exceptions it was raised from or while handling."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        yield exc
        exc = exc.__cause__ or exc.__context__


def free_bytes(path: pathlib.Path) -> int | None:
    """Bytes this user may still write on the filesystem holding ``path`` (or its nearest existing parent)."""
    for folder in (path, *path.parents):
        with contextlib.suppress(OSError):
            stats = os.statvfs(folder)
            return stats.f_bavail * stats.f_frsize
    return None


def says_disk_full(text: str) -> bool:
    """True when an error message says a write found no room on the disk."""
    return any(w in text for w in _FULL_WORDS)


def disk_full(exc: BaseException, path: pathlib.Path | None = None) -> bool:
    """True when ``exc`` (or what it was raised from) is a write that found no room on the disk; a vague SQLite
    "disk I/O error" counts when the filesystem holding ``path`` has (almost) no room left."""
    for error in _chain(exc):
        text = str(error)
        if isinstance(error, OSError) and error.errno in _FULL_ERRNOS or says_disk_full(text):
            return True
        if "disk I/O error" in text and path is not None and (free_bytes(path) or 0) < _LOW_SPACE_BYTES:
            return True
    return False


def full_disk_message(path: pathlib.Path) -> str:
    """What to say when the disk holding ``path`` is full."""
    return (
        f"the disk holding {path} is full (No space left on device): free some space there (or point AIR_HOME "
        "at a disk with room), then try again"
    )


def unusable_database(path: pathlib.Path, exc: BaseException) -> UnusableDatabase | None:
    """The error to raise when the SQLite database ``path`` failed with ``exc`` (a full disk, a damaged or
    foreign file, an unreadable one); None when ``exc`` is no database error (a bug: let it show)."""
    if disk_full(exc, path):
        return UnusableDatabase(f"{path} cannot be used: {full_disk_message(path.parent)}")
    sqlite = [e for e in _chain(exc) if type(e).__module__ == "sqlite3" or "sqlite3." in str(e)]
    if not sqlite:
        return None
    reason = re.sub(r"^\(sqlite3\.\w+\) ", "", str(sqlite[-1]).splitlines()[0])
    if any(w in reason for w in _DAMAGED_WORDS):
        return UnusableDatabase(
            f"{path} is damaged ({reason}): move it aside (`mv {path} {path}.damaged`) and a new, empty one is "
            "created, or restore it from a backup"
        )
    return UnusableDatabase(f"{path} cannot be used: SQLite says {reason!r}")


class SpaceReserve:
    """A file holding ``size_bytes`` of the disk, given back when the disk fills up, so that the end of a job can
    still be recorded there."""

    def __init__(self, path: pathlib.Path, size_bytes: int = 1 << 20):
        self.path = path
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, FILE_MODE)
            try:
                os.posix_fallocate(fd, 0, size_bytes)
            finally:
                os.close(fd)
        except OSError as exc:  # a disk already full: nothing to hold back, the job will say so
            log.warning("jupyter_air: no room for %s: %s", path, exc)
            self.release()

    def release(self) -> bool:
        """Give the room back; False when there was none held (any more)."""
        try:
            self.path.unlink()
        except FileNotFoundError:
            return False
        return True
