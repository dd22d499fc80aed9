"""A job attempt's logs kept as its MLflow run's artifacts once it ends (by its supervisor, or by the take-over of a
supervisor that is gone): written as the job's owner, never through a link, and not at all where the team's job
service keeps them (``AIR_JOB_LOGS=service``)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from jupyter_air.tracking.local_artifacts import UnsafeArtifactPath
from jupyter_air.tracking.naming import attempt_logs_folder
from jupyter_air.workloads.supervisor.run_as import NoAccount, account_for

#: ``service``: a job's logs stay with the team's job service (air-jobs sets it), which serves them behind the job's
#: permissions, instead of becoming its run's artifacts that whoever may read the experiment could read; neither the
#: supervisor nor the take-over of a supervisor that is gone uploads them.
LOGS_ENV = "AIR_JOB_LOGS"


def kept_by_service() -> bool:
    """True when the job service keeps the logs (``AIR_JOB_LOGS=service``): they are never uploaded to MLflow."""
    return os.environ.get(LOGS_ENV) == "service"


def keep_logs(run, owner: str, attempt: int, log_dirs: Sequence[Path]) -> str | None:
    """Upload each node's log files as ``run``'s artifacts (``logs/attempt_<n>/node_<i>``); a local artifact folder
    is written by ``owner``'s account under ``AIR_JOBS_RUN_AS=owner``, else by this process's (the one the command
    ran as). None when done or kept by the service; why not, when the path holds a link, the account may not write
    there or the owner has none (other errors, a full disk's, are raised)."""
    if kept_by_service():
        return None
    try:
        account = account_for(owner)
        writer = None if account is None else account.popen()
        for index, directory in enumerate(log_dirs):
            run.upload(sorted(directory.glob("*")), attempt_logs_folder(attempt, index), writer)
    except (UnsafeArtifactPath, PermissionError, NoAccount) as refused:
        return f"its output was not uploaded to MLflow ({refused}); `air logs` shows it"
    return None
