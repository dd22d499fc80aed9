"""Whether a path is this user's alone, the rule of OpenSSH's StrictModes: it belongs to this user, each folder
above it to this user or root, and no other user can write any of them (a folder with the sticky bit, as ``/tmp``,
excepted above it: others cannot rename or remove what is ours there), so no one else can plant or swap a file."""

from __future__ import annotations

import contextlib
import grp
import os
import pwd
import secrets
import stat
from collections.abc import Callable, Iterator
from pathlib import Path


class NotOurs(Exception):
    """A path another user could change: ``what`` says which, whose it is or its mode; ``fix`` how to fix it."""

    def __init__(self, what: str, fix: str):
        super().__init__(f"{what}: {fix}")
        self.what, self.fix = what, fix


def account(uid: int) -> str | None:
    """The name of the account ``uid``, None when it has none."""
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return None


def whose(uid: int) -> str:
    """``uid``'s account with its number (``nobody (uid 65534)``), or the number alone."""
    return f"{name} (uid {uid})" if (name := account(uid)) else f"uid {uid}"


def _group_of_mine(gid: int) -> bool:
    """True when no account but this one is in group ``gid`` (a user-private group, as Jupyter's images make)."""
    me = os.geteuid()
    try:
        members = set(grp.getgrgid(gid).gr_mem) - {account(me)}
    except KeyError:
        return False
    return not members and all(p.pw_gid != gid or p.pw_uid == me for p in pwd.getpwall())


def writable_by_others(info: os.stat_result) -> bool:
    """Whether a user other than the owner may write the file or folder ``info`` describes."""
    if info.st_mode & stat.S_IWOTH:
        return True
    return bool(info.st_mode & stat.S_IWGRP) and not _group_of_mine(info.st_gid)


def _foreign(path: Path, info: os.stat_result, above: bool) -> NotOurs | None:
    """Why another user could change ``path`` (a folder ``above`` the one used, or that one), or None."""
    me = os.geteuid()
    if info.st_uid != me and not (above and info.st_uid == 0):
        chown = f" (or `sudo chown {account(me) or me} {path}` if it was yours)"
        fix = "use a folder of your own" + ("" if above else chown)
        return NotOurs(f"{path} belongs to {whose(info.st_uid)}, not to you ({whose(me)})", fix)
    sticky = above and info.st_mode & stat.S_ISVTX
    if not stat.S_ISLNK(info.st_mode) and writable_by_others(info) and not sticky:
        mode = stat.S_IMODE(info.st_mode)
        return NotOurs(f"{path} can be written by other users (mode {mode:o})", f"run `chmod go-w {path}`")
    return None


def _walk(path: Path, look: Callable[[Path], os.stat_result]) -> Iterator[tuple[Path, os.stat_result, bool]]:
    """``(part, its stat, whether it is above path)`` from ``/`` down, as far as the parts exist."""
    parts = [*reversed(path.parents), path]
    for part in parts:
        try:
            info = look(part)
        except OSError:  # missing, or under a file: creating it says so
            return
        yield part, info, part != path


def check_path(path: Path) -> None:
    """Raise :class:`NotOurs` unless ``path`` (if it exists) is this user's and no other user can write it or a
    folder above it, as written (a link there must be this user's or root's) and with its links followed."""
    path = path.absolute()
    for part, info, _ in _walk(path, os.lstat):
        if problem := _foreign(part, info, above=True):
            raise problem
    for part, info, above in _walk(path.resolve(), os.stat):
        if problem := _foreign(part, info, above):
            raise problem


def check_entries(folder: Path) -> None:
    """Raise :class:`NotOurs` unless every entry of ``folder`` (and what a link there names) is this user's and not
    writable by others: a state file planted while the folder was open is never read. The first one by name is
    said (a database before its ``-shm`` and ``-wal``, which SQLite gives the database's owner)."""
    try:
        names = sorted(os.listdir(folder))
    except (FileNotFoundError, NotADirectoryError):  # not made yet, or a file: creating it says so
        return
    for name in names:
        path = folder / name
        try:
            info = os.lstat(path)
            problem = _foreign(path, info, above=False)
            if problem is None and stat.S_ISLNK(info.st_mode):
                problem = _foreign(path, os.stat(path), above=False)
        except FileNotFoundError:  # removed meanwhile (a database's -wal file), or a link to nothing
            continue
        if problem:
            raise NotOurs(problem.what, f"move it aside (`mv {path} {path}.not-mine`) and see what it holds")


def private_folder(path: Path) -> Path:
    """``path`` as a folder of this user's alone: made 0700 if missing (its missing parents too), else used only
    when it is this user's, mode 0700 (no access for others) and not a link; :class:`NotOurs` otherwise."""
    path = path.absolute()
    _check_private(path)
    check_path(path)
    for folder in reversed([p for p in (path, *path.parents) if not os.path.lexists(p)]):
        with contextlib.suppress(FileExistsError):
            os.mkdir(folder, 0o700)
            os.chmod(folder, 0o700)  # mkdir's mode is masked by the umask
    _check_private(path)  # made by another user meanwhile: refused
    return path


def _check_private(path: Path) -> None:
    """Raise :class:`NotOurs` if ``path`` exists and is a link, no folder, another user's or open to others."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return
    if stat.S_ISLNK(info.st_mode) or not stat.S_ISDIR(info.st_mode):
        what = "a symbolic link" if stat.S_ISLNK(info.st_mode) else "not a folder"
        raise NotOurs(f"{path} is {what}", "give a new folder, or one of your own with mode 700")
    if problem := _foreign(path, info, above=False):
        raise problem if info.st_uid != os.geteuid() else NotOurs(problem.what, f"run `chmod 700 {path}`")
    if info.st_mode & 0o077:
        mode = stat.S_IMODE(info.st_mode)
        raise NotOurs(f"{path} can be entered by other users (mode {mode:o})", f"run `chmod 700 {path}`")


def write_private(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` as a new file of mode 0600 (made exclusively, never through a link), then renamed
    into place; an existing ``path`` that is a link or another user's is refused (:class:`NotOurs`)."""
    with contextlib.suppress(FileNotFoundError):
        info = os.lstat(path)
        if stat.S_ISLNK(info.st_mode) or info.st_uid != os.geteuid():
            what = "a symbolic link" if stat.S_ISLNK(info.st_mode) else f"{whose(info.st_uid)}'s"
            raise NotOurs(f"{path} is {what}, so secrets are not written there", "remove it, or give a new folder")
    staging = path.with_name(f".{path.name}.{secrets.token_hex(6)}")
    fd = os.open(staging, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.replace(staging, path)
    except BaseException:
        staging.unlink(missing_ok=True)
        raise
