"""Who may use a job or a schedule, as ``air permissions`` and the permissions route ask it: what a name means (a job
run id, else a schedule), its grants, and a grant, which also gives the user the matching permission on the job's
MLflow experiment when that experiment is on the shared tracking server this process uses (so they can open its
runs). Taking a job grant back leaves the experiment grant: ``air share --revoke`` takes that one. Blocking (SQLite,
HTTP): keep it off event loops."""

from __future__ import annotations

import os

from jupyter_air.tracking.sharing import share
from jupyter_air.workloads.jobs.jobs import Jobs
from jupyter_air.workloads.schedules.schedules import Schedules
from jupyter_air.workloads.state.permissions import EXPERIMENT_LEVELS, Target, job_target, schedule_target


class Access:
    """The permissions of the jobs and schedules in ``jobs``' store, as its caller sees them; experiment grants are
    made with this process's MLflow credentials, or as the caller with their bearer ``token`` (a team's job service
    acting for a hub user, whose own right to share the experiment the tracking server checks)."""

    def __init__(self, jobs: Jobs, token: str | None = None):
        self.jobs, self.token = jobs, token

    def target(self, name: str, action: str = "view") -> tuple[Target, str, str | None]:
        """The job (an id ``job-...``) or schedule ``name`` means, its experiment and the tracking URI its runs
        go to (JobNotFound, ScheduleNotFound, or Forbidden when the caller may not do ``action`` to it)."""
        if name.startswith("job-"):
            job = self.jobs.get(name, action)
            return job_target(job), job.experiment_name, job.tracking_uri

        schedule = Schedules(self.jobs).get(name, fires=0, action=action)
        return schedule_target(schedule), schedule.name, os.environ.get("MLFLOW_TRACKING_URI")

    def list(self, name: str) -> dict:
        """Its owner, the grants on it (and, for a scheduled job, its schedule's), and the caller's level."""
        return self.jobs.permissions.grants(self.target(name)[0])

    def grant(self, name: str, user: str | None = None, group: str | None = None, level: str | None = None) -> dict:
        """Give ``user`` or ``group`` ``level`` on the job or schedule ``name`` (None: take it back), then what
        ``list`` answers with ``experiment_grant`` (what was granted on the experiment, or why nothing was).
        BadGrant, Forbidden or ShareError leave everything as it was."""
        self.jobs.permissions.check_grant(user, group, level)
        target, experiment, uri = self.target(name, "permissions")
        permissions = self.jobs.permissions
        shared = _experiment_grant(experiment, uri, user, level, self.token)
        return {**permissions.grant(target, user, group, level), "experiment_grant": shared}


def _experiment_grant(experiment: str, uri: str | None, user: str | None, level: str | None, token=None) -> str:
    """Give ``user`` the experiment permission that goes with ``level`` when the experiment is on the shared
    tracking server of this process; what was done, in words."""
    if level is None:
        return f"unchanged: take a grant on experiment {experiment!r} back with `air share --revoke`"
    if user is None:
        return "none: MLflow's authentication app has no groups; give each member READ with `air share`"
    current = os.environ.get("MLFLOW_TRACKING_URI", "")
    if not (uri or "").startswith(("http://", "https://")) or uri != current:
        return f"none: experiment {experiment!r} is not on this session's shared tracking server"

    return share(experiment, user, EXPERIMENT_LEVELS[level], token).describe()
