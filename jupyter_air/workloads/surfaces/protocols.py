"""The jobs and schedules as the panel's routes answer them, whoever keeps them: the ones under AIR_HOME
(:class:`~jupyter_air.workloads.surfaces.jobs_view.JobsView`,
:class:`~jupyter_air.workloads.surfaces.schedules_view.SchedulesView`; the team's job service answers with these too)
or the team's job service seen from a user's server (:class:`~jupyter_air.workloads.surfaces.team_jobs.ServiceJobs`,
``ServiceSchedules``). Every answer is a JSON object of the shapes in :mod:`~jupyter_air.workloads.jobs.shapes`;
errors name their kind (:mod:`jupyter_air.error_kinds`)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Protocol


class JobsSurface(Protocol):
    """The jobs: listed, read, submitted from a workload file, canceled, their permissions and their logs."""

    def list(self, limit: int, schedule: str | None = None, /) -> dict: ...

    def get(self, job_run_id: str, /) -> dict: ...

    def submit(self, root: Path, path: str, /) -> dict: ...

    def cancel(self, job_run_id: str, /) -> dict: ...

    def permissions(self, name: str, /) -> dict: ...

    def grant(self, name: str, user: str | None, group: str | None, level: str | None, /) -> dict: ...

    def logs(self, job_run_id: str, attempt: int, node: int, offset: int, /) -> dict: ...

    def log_blocks(self, job_run_id: str, attempt: int, node: int, /) -> tuple[int, Iterator[bytes]]: ...


class SchedulesSurface(Protocol):
    """The schedules: listed, read, deleted, paused, resumed and fired now."""

    def list(self, /) -> dict: ...

    def get(self, name: str, /) -> dict: ...

    def delete(self, name: str, /) -> dict: ...

    def pause(self, name: str, /) -> dict: ...

    def resume(self, name: str, /) -> dict: ...

    def run_now(self, name: str, /) -> dict: ...
