"""A run's artifacts in a local folder (a ``file:`` URI or a path), written without following links.

The folder is walked from ``/`` one component at a time with ``O_NOFOLLOW``, missing folders are created, and each
file is written new and renamed into place: a link in the path stops the write, and a file someone prepared in the
folder is replaced, never written through. Another account's writes (a job's owner's) are made in a child forked
here that became that account, reading the files through descriptors opened before.
"""

from __future__ import annotations

import contextlib
import errno
import gc
import json
import os
import secrets
import stat
from collections.abc import Sequence
from pathlib import Path
from urllib.parse import unquote, urlsplit


class UnsafeArtifactPath(OSError):
    """The artifact folder's path holds a link, or a name that would leave the folder: nothing was written there."""


def local_folder(artifact_uri: str) -> Path | None:
    """The folder of a local artifact URI (``file:...`` or an absolute path); None for any other store."""
    scheme = artifact_uri.split(":", 1)[0].lower() if ":" in artifact_uri else ""
    if scheme == "file":
        return Path(unquote(urlsplit(artifact_uri).path))
    if not scheme and artifact_uri.startswith("/"):
        return Path(artifact_uri)
    return None


def keep(folder: Path, artifact_path: str, files: Sequence[Path], owner: dict | None = None) -> None:
    """Copy ``files`` into ``folder/artifact_path`` without following links, as the account ``owner`` names
    (``subprocess.Popen``'s ``user``, ``group`` and ``extra_groups``; None: this process's). UnsafeArtifactPath when a
    link is in the way."""
    parts = _parts(artifact_path)
    sources = [(path.name, os.open(path, os.O_RDONLY | os.O_NOFOLLOW)) for path in files]
    try:
        if owner is None:
            write(folder, parts, sources)
        else:
            _write_as(owner, folder, parts, sources)
    finally:
        for _, fd in sources:
            os.close(fd)


def write(folder: Path, parts: Sequence[str], sources: Sequence[tuple[str, int]]) -> None:
    """Write each ``(name, readable descriptor)`` as ``folder/<parts...>/<name>``, in this process."""
    if not folder.is_absolute():
        raise UnsafeArtifactPath(f"artifact folder {folder} is not an absolute path; give the experiment one")
    fd = os.open("/", os.O_RDONLY | os.O_DIRECTORY)
    path = Path("/")
    try:
        for name in (*_parts(str(folder).lstrip("/")), *parts):
            path = path / name
            child = _enter(fd, name, path)
            os.close(fd)
            fd = child
        for name, source in sources:
            _write_new(fd, path, name, source)
    except UnsafeArtifactPath:
        raise
    except OSError as exc:  # said with the folder: the calls above name one component only
        raise OSError(exc.errno, f"{exc.strerror or exc} (in {path})") from exc
    finally:
        os.close(fd)


def _parts(relative: str) -> list[str]:
    parts = [part for part in relative.split("/") if part]
    if any(part in (".", "..") for part in parts):
        raise UnsafeArtifactPath(f"artifact path {relative!r} may not hold '.' or '..'")
    return parts


def _enter(parent: int, name: str, path: Path) -> int:
    """Open folder ``name`` in ``parent``, created if missing (mode 0777 less the umask), never through a link."""
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW
    try:
        try:
            return os.open(name, flags, dir_fd=parent)
        except FileNotFoundError:
            with contextlib.suppress(FileExistsError):
                os.mkdir(name, 0o777, dir_fd=parent)
            return os.open(name, flags, dir_fd=parent)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR) and _is_link(parent, name):
            raise _link(path) from None
        raise


def _write_new(folder: int, path: Path, name: str, source: int) -> None:
    """Copy ``source`` to a new file in ``folder`` (0666 less the umask) renamed to ``name``: a link or file already
    there is replaced, never opened."""
    if name != Path(name).name or name in ("", ".", ".."):
        raise UnsafeArtifactPath(f"artifact file name {name!r} is not a plain file name")
    staging = f".{name}.{secrets.token_hex(6)}"
    fd = os.open(staging, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o666, dir_fd=folder)
    try:
        with os.fdopen(fd, "wb") as target:
            offset = 0
            while chunk := os.pread(source, 1 << 20, offset):
                target.write(chunk)
                offset += len(chunk)
        if _is_dir(folder, name):
            raise UnsafeArtifactPath(f"{path / name} is a folder; remove it to keep the file {name} there")
        os.replace(staging, name, src_dir_fd=folder, dst_dir_fd=folder)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(staging, dir_fd=folder)
        raise


def _is_link(parent: int, name: str) -> bool:
    try:
        return stat.S_ISLNK(os.stat(name, dir_fd=parent, follow_symlinks=False).st_mode)
    except OSError:
        return False


def _is_dir(parent: int, name: str) -> bool:
    try:
        return stat.S_ISDIR(os.stat(name, dir_fd=parent, follow_symlinks=False).st_mode)
    except OSError:
        return False


def _link(path: Path) -> UnsafeArtifactPath:
    return UnsafeArtifactPath(
        f"{path} is a symbolic link: a run's artifacts are never written through a link. Give the experiment an "
        "artifact location whose path holds none, and leave the run's artifact folder to air"
    )


def _write_as(owner: dict, folder: Path, parts: Sequence[str], sources: Sequence[tuple[str, int]]) -> None:
    """``write`` in a child forked here (it needs no program the account may run) that became the account of
    ``owner`` (``subprocess.Popen``'s ``user``, ``group``, ``extra_groups``); its error raised here."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: become the account, write, say what failed, and leave without running anything else
        gc.disable()  # no finalizer of the parent's objects runs here
        code = 0
        try:
            os.close(read_end)
            os.setgroups(owner.get("extra_groups", []))
            os.setgid(owner["group"])
            os.setuid(owner["user"])
            write(folder, parts, sources)
        except BaseException as exc:  # noqa: BLE001 - said to the parent, which raises it
            code = 1
            with contextlib.suppress(BaseException):
                unsafe = isinstance(exc, UnsafeArtifactPath)
                number, words = (exc.errno, exc.strerror) if isinstance(exc, OSError) else (None, None)
                said = {"errno": number, "unsafe": unsafe, "message": words or str(exc)}
                os.write(write_end, json.dumps(said).encode())
        finally:
            os._exit(code)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as child:
        said = child.read()
    _, status = os.waitpid(pid, 0)
    if os.waitstatus_to_exitcode(status) == 0:
        return
    try:
        report = json.loads(said)
    except ValueError:
        report = {"errno": None, "unsafe": False, "message": f"exit status {os.waitstatus_to_exitcode(status)}"}
    if report["unsafe"]:
        raise UnsafeArtifactPath(report["message"])
    message = f"{report['message']}, writing as uid {owner['user']}"
    raise OSError(report["errno"], message) if report["errno"] else OSError(message)
