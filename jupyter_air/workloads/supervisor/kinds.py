"""Which runner runs each kind of work at each place. A workload's ``kind`` is ``command`` (a shell command, this
package's own: :class:`~jupyter_air.workloads.supervisor.runners.LocalNodes` here,
:class:`~jupyter_air.workloads.supervisor.ray_nodes.RayNodes` on Ray nodes) or a kind that a layer above
plugs in through the ``jupyter_air.kinds`` entry point: ``call``, a notebook's ``.distributed(remote=True)``
(:data:`jupyter_air.training.remote_runner.RUNNERS`). So the supervisor runs kinds of work whose code this package never
imports."""

from __future__ import annotations

import functools
from collections.abc import Callable
from importlib.metadata import entry_points
from pathlib import Path

from jupyter_air.workloads.supervisor.ray_nodes import RayNodes
from jupyter_air.workloads.supervisor.runners import AttemptContext, AttemptRunner, LocalNodes

#: The kind of work of a workload that does not name one.
DEFAULT_KIND = "command"
#: The entry-point group of the other kinds: ``<kind> = "<module>:<name>"`` names their ``{place: runner factory}``.
KINDS_GROUP = "jupyter_air.kinds"

Runners = dict[str, Callable[[AttemptContext], AttemptRunner]]


#: The ``command`` kind's runners; the places are ``local`` (this machine) and ``ray`` (nodes of a cluster).
COMMAND: Runners = {"local": LocalNodes, "ray": RayNodes}


@functools.cache  # installed packages do not change under a running process: one look per kind (20 ms each)
def runners(kind: str) -> Runners:
    """The ``{place: runner factory}`` of ``kind``; ValueError for a kind no installed package provides."""
    if kind == DEFAULT_KIND:
        return COMMAND
    for point in entry_points(group=KINDS_GROUP, name=kind):
        return point.load()
    known = sorted({DEFAULT_KIND, *entry_points(group=KINDS_GROUP).names})
    raise ValueError(f"kind: {kind!r} is no kind of work jupyter_air knows ({', '.join(known)}); reinstall jupyter_air")


def runner_for(context: AttemptContext, place: str) -> AttemptRunner:
    """The runner of the attempt's kind of work at ``place``."""
    return runners(context.spec.get("kind", DEFAULT_KIND))[place](context)


def runner_check(spec: dict, place: str) -> str | None:
    """Why a workload cannot run at ``place`` (``field: why``), from its runner's ``check(spec)`` if it has one
    (a command on this machine: its program; Ray nodes have their own programs)."""
    check = getattr(runners(spec.get("kind", DEFAULT_KIND))[place], "check", None)
    return check(spec) if check else None


def runner_prestart(spec: dict, place: str, job_run_id: str, job_dir: Path) -> Callable[[], None]:
    """Start what the job's first attempt runs on ahead of its supervisor, if its runner can (``prestart``); returns
    what frees it again, for a supervisor that is not started after all."""
    prestart = getattr(runners(spec.get("kind", DEFAULT_KIND))[place], "prestart", None)
    return prestart(spec, job_run_id, job_dir) if prestart else lambda: None
