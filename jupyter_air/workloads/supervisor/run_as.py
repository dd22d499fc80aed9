"""Whose account a job's command runs in. A job submitted by ``air run`` or a user's Jupyter server runs as that
user, like everything they start. On the team's job service (air-jobs) started as root with
``AIR_JOBS_RUN_AS=owner``, each command runs as the local account named like the job's owner (the hub user), so a
job can read neither the service's job store nor other users' files; the log pump and the supervisor stay the
service's. Unset (the default, and ``make hub``'s demo): the service's own account runs every job."""

from __future__ import annotations

import os
import pwd
from dataclasses import dataclass

#: ``owner``: a job's command runs as the local account named like its owner (the service must run as root).
RUN_AS_ENV = "AIR_JOBS_RUN_AS"


class NoAccount(ValueError):
    """The job's owner has no local account to run its command as (nothing was created)."""


@dataclass(frozen=True)
class Account:
    """A local account a command runs as."""

    name: str
    uid: int
    gid: int
    home: str

    def popen(self) -> dict:
        """``subprocess.Popen`` arguments that start a process as this account, with its groups."""
        return {"user": self.uid, "group": self.gid, "extra_groups": os.getgrouplist(self.name, self.gid)}

    def environment(self, env: dict[str, str]) -> dict[str, str]:
        """``env`` (without the service's credentials: ``service_secrets``) with this account's home and name."""
        return {**env, "HOME": self.home, "USER": self.name, "LOGNAME": self.name}


def account_for(owner: str) -> Account | None:
    """The account ``owner``'s commands run as under ``AIR_JOBS_RUN_AS=owner``; None when commands run as this
    process's account. NoAccount says what to do when there is none."""
    if os.environ.get(RUN_AS_ENV, "") != "owner":
        return None
    try:
        entry = pwd.getpwnam(owner)
    except KeyError:
        raise NoAccount(
            f"no local account {owner!r} to run the job as ({RUN_AS_ENV}=owner): the job service's admins create "
            "one per hub user (as the hub's local spawner needs), or run commands on a Ray cluster"
        ) from None
    if os.geteuid() != 0 and entry.pw_uid != os.geteuid():
        raise NoAccount(f"the job service must run as root to start commands as {owner!r} ({RUN_AS_ENV}=owner)")
    return Account(owner, entry.pw_uid, entry.pw_gid, entry.pw_dir)


def account_problem(owner: str) -> str | None:
    """Why ``owner``'s job could not start its command (checked before anything is created); None when it can."""
    try:
        account_for(owner)
    except NoAccount as err:
        return str(err)
    return None
