"""``AIR_HOME``, where jupyter_air keeps its state: owner-only folders (0700) and files (0600), and a file lock."""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import pathlib
import stat
from collections.abc import Iterator, Mapping

log = logging.getLogger(__name__)

DIR_MODE = 0o700
FILE_MODE = 0o600
_warned: set[pathlib.Path] = set()


class AirHomeError(OSError):
    """``AIR_HOME`` cannot be created or used; the message says which folder and how to fix it."""


def air_home_path(environ: Mapping[str, str] | None = None) -> pathlib.Path:
    """Where ``AIR_HOME`` is (``$AIR_HOME`` or ``~/.jupyter_air``), without creating it."""
    env = os.environ if environ is None else environ
    return pathlib.Path(env.get("AIR_HOME") or "~/.jupyter_air").expanduser().resolve()


def air_home(environ: Mapping[str, str] | None = None) -> pathlib.Path:
    """``$AIR_HOME`` or ``~/.jupyter_air``, created owner-only if missing (a shared one is warned about once)."""
    home = air_home_path(environ)
    try:
        private_dir(home)
    except OSError as exc:
        raise AirHomeError(
            f"AIR_HOME={home} cannot be created: {exc.strerror or exc}. "
            "Set AIR_HOME to a folder you can write, e.g. `export AIR_HOME=~/.jupyter_air`."
        ) from None
    _warn_if_shared(home)
    return home


def private_dir(path: pathlib.Path) -> pathlib.Path:
    """Create ``path`` and its missing parents, each with mode 0700; returns it."""
    missing = [p for p in (path, *path.parents) if not p.is_dir()]
    for folder in reversed(missing):
        with contextlib.suppress(FileExistsError):
            folder.mkdir(mode=DIR_MODE)
            folder.chmod(DIR_MODE)  # mkdir's mode is masked by the umask
    return path


def private_file(path: pathlib.Path) -> pathlib.Path:
    """Create ``path`` empty with mode 0600 unless it exists (so a database made in it stays private)."""
    with contextlib.suppress(FileExistsError):
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE))
    return path


def open_private(path: pathlib.Path, mode: str = "ab", buffering: int = -1):
    """Open ``path`` for appending (binary by default), creating it with mode 0600."""
    return open(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, FILE_MODE), mode, buffering=buffering)


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
