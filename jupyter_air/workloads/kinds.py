"""Which runner runs each kind of work at each place: a workload's ``kind`` is ``command`` (a shell command:
:class:`~jupyter_air.workloads.runners.LocalNodes` here, :class:`~jupyter_air.workloads.ray_nodes.RayNodes` on Ray
nodes) or ``call`` (a notebook's ``.distributed(remote=True)``:
:class:`~jupyter_air.training.call_runner.CallRunner`)."""

from __future__ import annotations

from collections.abc import Callable

from .runners import AttemptContext, AttemptRunner, LocalNodes

#: The kind of work of a workload that does not name one.
DEFAULT_KIND = "command"


def _ray_nodes(context: AttemptContext):
    from .ray_nodes import RayNodes

    return RayNodes(context.spec, context.job_dir, context.attempt, context.marker, context.umask)


def _call(place: str) -> Callable[[AttemptContext], AttemptRunner]:
    def runner(context: AttemptContext) -> AttemptRunner:
        from jupyter_air.training.call_runner import CallRunner

        return CallRunner(context, place)

    return runner


#: ``{kind: {place: runner factory}}``; the places are ``local`` (this machine) and ``ray`` (nodes of a cluster).
RUNNERS: dict[str, dict[str, Callable[[AttemptContext], AttemptRunner]]] = {
    DEFAULT_KIND: {"local": LocalNodes, "ray": _ray_nodes},
    "call": {"local": _call("local"), "ray": _call("ray")},
}


def runner_for(context: AttemptContext, place: str) -> AttemptRunner:
    """The runner of the attempt's kind of work at ``place``."""
    kind = context.spec.get("kind", DEFAULT_KIND)
    return RUNNERS[kind][place](context)


def runner_check(spec: dict, place: str) -> str | None:
    """Why a workload cannot run at ``place`` (``field: why``), from its runner's ``check(spec)`` if it has one
    (a command on this machine: its program; Ray nodes have their own programs)."""
    runner = RUNNERS[spec.get("kind", DEFAULT_KIND)][place]
    check = getattr(runner, "check", None)
    return check(spec) if check else None
