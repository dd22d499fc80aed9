"""The jobs under AIR_HOME and the team's job service answer the panel's routes through one surface: each keeper has
every method of it, taking the same arguments in the same order (the routes pass them by position)."""

from __future__ import annotations

import inspect

import pytest

from jupyter_air.workloads.surfaces.jobs_view import JobsView
from jupyter_air.workloads.surfaces.protocols import JobsSurface, SchedulesSurface
from jupyter_air.workloads.surfaces.schedules_view import SchedulesView
from jupyter_air.workloads.surfaces.team_jobs import ServiceJobs, ServiceSchedules


def positional(function) -> list[str]:
    """The kinds of the arguments after ``self`` that may be passed by position: required or with a default."""
    parameters = list(inspect.signature(function).parameters.values())[1:]
    passable = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return ["required" if p.default is p.empty else "default" for p in parameters if p.kind in passable]


def methods(surface: type) -> list[str]:
    return [name for name, value in vars(surface).items() if inspect.isfunction(value) and not name.startswith("_")]


@pytest.mark.parametrize(
    ("surface", "keeper"),
    [
        (JobsSurface, JobsView),
        (JobsSurface, ServiceJobs),
        (SchedulesSurface, SchedulesView),
        (SchedulesSurface, ServiceSchedules),
    ],
    ids=lambda v: v.__name__,
)
def test_each_keeper_answers_every_method_of_its_surface_with_the_same_arguments(surface, keeper):
    # Given a surface and one keeper of it, When their methods are compared
    for name in methods(surface):
        # Then the keeper has it, and takes every argument the surface passes, in order, needing no more
        assert callable(getattr(keeper, name, None)), f"{keeper.__name__} has no {name}()"
        wanted, given = positional(getattr(surface, name)), positional(getattr(keeper, name))
        assert len(given) >= len(wanted), f"{keeper.__name__}.{name} takes fewer arguments than {surface.__name__}"
        assert "required" not in given[len(wanted) :], f"{keeper.__name__}.{name} needs more than the routes pass"
