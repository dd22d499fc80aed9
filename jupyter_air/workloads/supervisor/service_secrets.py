"""The team's job service's credentials (its MLflow account, its Ray cluster's token): read from a file of mode 0600
(``AIR_JOBS_SECRETS_FILE``) into the memory of the service and of each supervisor it starts, and never put in the
environment of a process it starts. A job's command, its log pump and a supervisor get the service's environment
without them (``without_service_secrets``); what a workload sets in ``env_variables`` is its own and stays."""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Mapping
from pathlib import Path

from jupyter_air.owned import NotOurs, check_path, whose
from jupyter_air.workloads.supervisor.run_as import RUN_AS_ENV

#: The team's job service's credentials: the path of a JSON file (mode 0600, the service's account's) of
#: MLFLOW_TRACKING_USERNAME and MLFLOW_TRACKING_PASSWORD (or MLFLOW_TRACKING_TOKEN) and RAY_AUTH_TOKEN, read at start
#: by it and by each supervisor; never give them in its environment.
SECRETS_FILE_ENV = "AIR_JOBS_SECRETS_FILE"
#: ``1`` in the team's job service and the supervisors it starts (it sets it): what they start gets none of its
#: credentials in its environment.
SERVICE_ENV = "AIR_JOBS_SERVICE"
#: What the secrets file may hold.
FILE_SECRETS = frozenset(
    ("MLFLOW_TRACKING_USERNAME", "MLFLOW_TRACKING_PASSWORD", "MLFLOW_TRACKING_TOKEN", "RAY_AUTH_TOKEN")
)
#: The service's credentials: never in the environment of a process it starts (the hub's token included). The
#: secrets file's path is no secret: supervisors read the file, a job of another account cannot.
SERVICE_SECRETS = FILE_SECRETS | {"JUPYTERHUB_API_TOKEN", "JPY_API_TOKEN"}


class SecretsError(ValueError):
    """The secrets file cannot be used: the message names it, why, and what to do."""


def on_service(environ: Mapping[str, str] | None = None) -> bool:
    """True in the team's job service and its supervisors (``AIR_JOBS_SERVICE=1``, or ``AIR_JOBS_RUN_AS=owner``)."""
    env = os.environ if environ is None else environ
    return env.get(SERVICE_ENV) == "1" or env.get(RUN_AS_ENV) == "owner"


def without_service_secrets(environ: Mapping[str, str]) -> dict[str, str]:
    """``environ`` for a process the service starts: none of its credentials on the service, all of it elsewhere
    (a user's own ``air run`` passes their tracking credentials to their jobs)."""
    if not on_service(environ):
        return dict(environ)
    return {key: value for key, value in environ.items() if key not in SERVICE_SECRETS}


def read_secrets(path: str | Path) -> dict[str, str]:
    """The credentials in the secrets file at ``path``; SecretsError unless it is a JSON object of FILE_SECRETS
    names and strings, in a file of this account's (or root's) that no other user can read, reached through no
    folder another user could swap."""
    path = Path(path)
    where = f"{SECRETS_FILE_ENV}={path}"
    try:
        check_path(path)
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except NotOurs as err:
        raise SecretsError(f"{where}: {err}") from None
    except OSError as err:
        raise SecretsError(
            f"{where} cannot be opened ({err.strerror}): give the path of the service's secrets file, "
            "a JSON object written with mode 0600"
        ) from None
    with os.fdopen(fd, "rb") as file:
        info = os.fstat(file.fileno())
        if info.st_uid not in (os.geteuid(), 0) or not stat.S_ISREG(info.st_mode):
            raise SecretsError(f"{where} is {whose(info.st_uid)}'s or no file: the service's account must own it")
        if info.st_mode & 0o077:
            mode = stat.S_IMODE(info.st_mode)
            raise SecretsError(f"{where} can be read by other users (mode {mode:o}): run `chmod 600 {path}`")
        try:
            secrets = json.loads(file.read())
        except ValueError as err:
            raise SecretsError(f"{where} is not JSON ({err}): write a JSON object of names and values") from None
    if not isinstance(secrets, dict) or not all(isinstance(v, str) for v in secrets.values()):
        raise SecretsError(f'{where} must be a JSON object of strings, e.g. {{"MLFLOW_TRACKING_PASSWORD": "..."}}')
    unknown = sorted(set(secrets) - FILE_SECRETS)
    if unknown:
        raise SecretsError(f"{where}: unknown name(s) {', '.join(unknown)}; it holds {', '.join(sorted(FILE_SECRETS))}")
    return secrets


def load_service_secrets() -> list[str]:
    """Put the secrets file's credentials (if ``AIR_JOBS_SECRETS_FILE`` is set) in this process's ``os.environ``,
    where MLflow's and Ray's clients read them: set after the process started, they are not in its original
    environment (``/proc/<pid>/environ``), and processes it starts get them only where ``without_service_secrets``
    is not used. The names loaded."""
    path = os.environ.get(SECRETS_FILE_ENV)
    if not path:
        return []
    secrets = read_secrets(path)
    os.environ.update(secrets)
    return sorted(secrets)
