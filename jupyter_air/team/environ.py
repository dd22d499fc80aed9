"""What the job service does with the credentials JupyterHub puts in its environment (its hub token): it takes them
into memory and wipes them from the process's original environment block, which ``/proc/<pid>/environ`` shows to
every process of the same account (a job, in the default mode) long after ``os.environ.pop``. Credentials of its
own that an admin put in its ``environment`` are refused: they belong in the secrets file."""

from __future__ import annotations

import ctypes
import os
from collections.abc import Iterable

from jupyter_air.workloads.supervisor.service_secrets import FILE_SECRETS, SECRETS_FILE_ENV


class CredentialsInEnvironment(ValueError):
    """The service's environment holds a credential that belongs in its secrets file."""


def check_no_credentials(environ) -> None:
    """Raise CredentialsInEnvironment, naming the variables and the fix, when ``environ`` holds a credential of the
    secrets file's (its supervisors, which read the file, would not get it)."""
    found = sorted(FILE_SECRETS & set(environ))
    if found:
        raise CredentialsInEnvironment(
            f"{', '.join(found)} in the job service's environment, where the jobs it runs as its own account can read "
            f"it (/proc/<pid>/environ): move it to a JSON file of mode 0600 and give its path as {SECRETS_FILE_ENV} "
            "in the service's environment instead (see the docs' \"Configure the hub\")"
        )


def forget(names: Iterable[str]) -> dict[str, str]:
    """The values of ``names`` in this process's environment, removed from ``os.environ`` and overwritten with NUL
    bytes in the original environment block (Linux: ``/proc/self/stat`` says where it is)."""
    taken = {name: os.environ.pop(name) for name in names if name in os.environ}
    if not taken:
        return taken
    start, end = _environment_block()
    with open("/proc/self/environ", "rb") as block:
        text = block.read()
    offset = 0
    for entry in text[: end - start].split(b"\0"):
        if entry.split(b"=", 1)[0].decode(errors="replace") in taken:
            ctypes.memset(start + offset, 0, len(entry))
        offset += len(entry) + 1
    return taken


def _environment_block() -> tuple[int, int]:
    """``(env_start, env_end)``: the addresses of this process's original environment strings."""
    with open("/proc/self/stat", "rb") as stat:
        fields = stat.read().rsplit(b")", 1)[1].split()
    return int(fields[47]), int(fields[48])  # fields 50 and 51 of proc(5); the list starts at field 3
