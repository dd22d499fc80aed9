"""The schedules of one AIR_HOME as the Experiment panel and the team's job service show them: ``air schedules list
-o json`` with each schedule's last job (its status and the link of its latest attempt) and whether a driver fires
them, get, pause, resume, run-now and delete. Knows nothing of HTTP; blocking (SQLite, processes): call it off the
event loop."""

from __future__ import annotations

from jupyter_air.workloads.jobs.jobs import JobNotFound
from jupyter_air.workloads.schedules.schedules import Schedules, schedule_json
from jupyter_air.workloads.schedules.tick import run_now
from jupyter_air.workloads.state.records import Schedule
from jupyter_air.workloads.surfaces.jobs_view import JobsView


class SchedulesView:
    """Answers the schedules routes; jobs are shown as ``jobs`` shows them (the job list's shape and links)."""

    def __init__(self, jobs: JobsView):
        self.jobs = jobs
        self.schedules = Schedules(jobs.jobs)

    def list(self) -> dict:
        """Every schedule by name, each with its last fire and that fire's job (null: none, or forgotten), and the
        ``driver``: when one last ticked, and whether a schedule waits past its fire time for one."""
        found, driver = self.schedules.listing()
        return {"schedules": [self._json(schedule) for schedule in found], "driver": driver.to_json()}

    def get(self, name: str) -> dict:
        """One schedule with its latest fires (as ``air schedules get -o json``), its last fire and that job."""
        return self._json(self.schedules.get(name))

    def delete(self, name: str) -> dict:
        """Remove ``name`` and its fire history (what it was); the jobs it started go on."""
        return schedule_json(self.schedules.delete(name))

    def pause(self, name: str) -> dict:
        """Stop firing ``name`` until resumed (its running jobs go on); ScheduleNotFound for an unknown name."""
        return self._json(self.schedules.pause(name))

    def resume(self, name: str) -> dict:
        """Fire ``name`` again from its next fire time (missed ones are not caught up)."""
        return self._json(self.schedules.resume(name))

    def run_now(self, name: str) -> dict:
        """Fire ``name`` once now, paused or not: the fire and its job (null when it was not submitted, the fire's
        ``reason`` says why); ScheduleNotFound, or Busy when it already has ``max_concurrent_runs`` jobs active."""
        fire = run_now(self.jobs.jobs, name)
        return {"fire": fire.to_json(), "job": self._job(fire.job_run_id)}

    def _json(self, schedule: Schedule) -> dict:
        last = schedule.fires[0] if schedule.fires else None
        return {
            **schedule_json(schedule),
            "last_fire": last.to_json() if last else None,
            "last_job": self._job(last.job_run_id) if last else None,
        }

    def _job(self, job_run_id: str | None) -> dict | None:
        if job_run_id is None:
            return None
        try:
            return self.jobs.get(job_run_id)
        except JobNotFound:  # forgotten (a schedule's grants cover its jobs: one who sees it sees them)
            return None
