"""``auto`` made concrete from what only this user controls: its own raylets, and Ray's record of the cluster last
started here when no other user can have written it.

Ray's own discovery takes the ``--gcs-address`` of *any* process whose ``argv[0]`` contains ``raylet``, whoever
runs it, and, with several, the address in ``$RAY_TMPDIR/ray/ray_current_cluster`` (``/tmp/ray`` by default, a
folder Ray makes writable by everyone): another local user could name their own listener there, and the probe and
``ray.init`` would then send them the cluster's token. Here nothing another user runs or can write is trusted.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Mapping
from pathlib import Path

import psutil

from .address import check
from .errors import BadAddress, ClusterUnreachable

_FLAG = "--gcs-address="
GIVE_ADDRESS = (
    "give the head's address instead (host:port, the GCS port, 6379 by default): AIR_RAY_ADDRESS=head-host:6379, "
    "c.JupyterAir.ray_address or RAY_ADDRESS"
)


class Untrusted(Exception):
    """A file (or a folder above it) that another user could have written; the message says which and why."""


def auto_address(environ: Mapping[str, str] | None = None) -> str:
    """The GCS address ``auto`` means: ``$RAY_ADDRESS``; else the one cluster this user's raylets on this machine
    belong to; else, with several, the one of them Ray's record (``ray_current_cluster``) names, if no other user
    can have written it. Raises :class:`ClusterUnreachable` saying why, and what to give instead."""
    env = os.environ if environ is None else environ
    given = env.get("RAY_ADDRESS", "").strip()
    if given and given != "auto":
        return given
    own, others = raylet_addresses()
    if len(own) == 1:
        return next(iter(own))
    ignored = f"; {others} raylet process(es) of other users were ignored" if others else ""
    if not own:
        raise ClusterUnreachable(
            f"Ray address 'auto' found no Ray node of yours on this machine{ignored}: {GIVE_ADDRESS}"
        )
    path = ray_record_file()
    try:
        recorded = read_record(path)
    except Untrusted as exc:
        why = f"Ray's record of the last cluster is not used: {exc}"
    else:
        if recorded in own:
            return recorded
        why = f"{path} names {recorded}, none of them" if recorded else f"no record of the last cluster in {path}"
    raise ClusterUnreachable(
        f"Ray address 'auto' found several Ray clusters of yours on this machine ({', '.join(sorted(own))}) and "
        f"cannot tell which ({why}{ignored}): {GIVE_ADDRESS}; or start Ray with RAY_TMPDIR in a folder of mode 0700 "
        "(see the Ray recipe in jupyter_air's docs)"
    )


def raylet_addresses() -> tuple[set[str], int]:
    """The ``--gcs-address`` values of this user's raylet processes (``argv[0]`` containing ``raylet``, as Ray
    finds them), and how many raylet processes of other users were passed over."""
    me, own, others = os.geteuid(), set(), 0
    for proc in psutil.process_iter(["cmdline", "uids"]):
        with contextlib.suppress(psutil.Error):
            cmdline, uids = proc.info["cmdline"], proc.info["uids"]
            if not cmdline or "raylet" not in os.path.basename(cmdline[0]):
                continue
            if uids is None or uids.real != me or uids.effective != me:
                others += 1
                continue
            own |= {arg[len(_FLAG) :] for line in cmdline for arg in line.split(" ") if arg.startswith(_FLAG)}
    return own - {"", "None"}, others


def ray_record_file() -> Path:
    """Where Ray records the cluster ``ray start`` last started here: ``$RAY_TMPDIR/ray/ray_current_cluster``."""
    from ray._common.utils import get_ray_address_file

    return Path(get_ray_address_file(None))


def read_record(path: Path) -> str | None:
    """The address in Ray's record at ``path`` (None without one); :class:`Untrusted` when another user could have
    written it."""
    try:
        text = read_private(path)
    except FileNotFoundError:
        return None
    try:
        return check(text.strip())
    except BadAddress:
        raise Untrusted(f"{path} holds no address") from None


def read_private(path: Path) -> str:
    """The text of ``path`` if no other user can have written it or a folder above it: each, from ``/`` down,
    belongs to this user or root and is writable by no one else (a sticky folder such as ``/tmp`` may be), unless
    a folder of this user's with mode 0700 above it keeps everyone else out. The path is resolved first and then
    walked without following links, so what is read is the file checked."""
    real = Path(os.path.realpath(path))
    me, where, sheltered = os.geteuid(), Path("/"), False
    fd = os.open("/", os.O_RDONLY | os.O_DIRECTORY)
    try:
        for index, name in enumerate(("", *real.parts[1:])):
            last = index == len(real.parts) - 1
            if name:
                where = where / name
                flags = os.O_RDONLY | os.O_NOFOLLOW | (os.O_NONBLOCK if last else os.O_DIRECTORY)
                try:
                    child = os.open(name, flags, dir_fd=fd)
                except FileNotFoundError:
                    raise
                except OSError as exc:
                    what = "is a symbolic link" if os.path.islink(where) else f"cannot be opened ({exc.strerror})"
                    raise Untrusted(f"{where} {what}") from None
                os.close(fd)
                fd = child
            info = os.fstat(fd)
            if last and not stat.S_ISREG(info.st_mode):
                raise Untrusted(f"{where} is not a regular file")
            if not sheltered:
                _check(where, info, me)
            sheltered = sheltered or (info.st_uid == me and stat.S_ISDIR(info.st_mode) and not info.st_mode & 0o077)
        with os.fdopen(os.dup(fd), "r", errors="replace") as file:
            return file.read(4096)
    finally:
        os.close(fd)


def _check(where: Path, info: os.stat_result, me: int) -> None:
    if info.st_uid not in (me, 0):
        raise Untrusted(f"{where} belongs to another user (uid {info.st_uid})")
    if info.st_mode & 0o022 and not (stat.S_ISDIR(info.st_mode) and info.st_mode & stat.S_ISVTX):
        raise Untrusted(
            f"{where} can be written by other users (mode {stat.S_IMODE(info.st_mode):o}), who could rewrite the record"
        )
