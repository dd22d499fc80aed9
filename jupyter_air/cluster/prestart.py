"""Node actors started ahead of their driver: while Ray starts a Ray Job's driver (a new Python that imports Ray, about
4 s on a small machine), its submitter places the job's node actors (new Pythons of their own, about 4 s as well), so
the driver finds them running instead of starting them after itself.

The submitter places a detached placement group and one detached actor per bundle, named in
:data:`~.keeper.PARKED_NAMESPACE` and parked from their start (``parked_seconds`` of
:class:`~.agent.NodeAgent`), and records the group's id and the actors' names in a file of the job's folder. The
driver takes them (:func:`take`): when the group is ready it claims every actor, which from then on ends with the
driver as actors it placed itself would; when it is not ready at once, or an actor is gone, it frees them and places
its own. Actors whose driver never comes (its job canceled or failed before it started) free their nodes after
:data:`PARKED_SECONDS`.
"""

from __future__ import annotations

import contextlib
import json
import logging
import time
from collections.abc import Callable
from pathlib import Path

from jupyter_air.home import open_private

from .keeper import PARKED_NAMESPACE
from .placement import REPLY_SECONDS, NodeGroup, NodeInfo, bundle_hosts, start_actors, why_never

#: Seconds started actors wait for their driver before they free their nodes.
PARKED_SECONDS = 120.0
#: Seconds the submitter waits for Ray to know the actors it started by their names.
_REGISTER_SECONDS = 5.0
#: Seconds the driver gives a started group to be ready: one that waits for nodes is given up for a placement that
#: says what it waits for.
_READY_SECONDS = 1.0

log = logging.getLogger(__name__)


def prestart(actor_class: type, count: int, share: dict[str, float], name: str, record: Path) -> None:
    """Start ``count`` actors of ``actor_class`` with ``share`` each for a driver yet to come, named ``name-<node>``,
    and record them in ``record``; returns at once. Nothing is started for a cluster that can never hold them, nor
    where Ray refuses: the driver then places its own, and says why."""
    from ray.util.placement_group import placement_group

    group = None
    try:
        if why_never(count, share):
            return
        group = placement_group([dict(share) for _ in range(count)], strategy="STRICT_SPREAD", lifetime="detached")
        names = [f"{name}-{node}" for node in range(count)]
        start_actors(actor_class, group, share, count, (PARKED_SECONDS,), names)
        _until_registered(names)
        with open_private(record) as f:
            f.write(json.dumps({"group": group.id.hex(), "names": names}).encode())
    except Exception as exc:  # noqa: BLE001 - only a head start: the driver places the nodes itself
        log.info("node actors not started ahead of the driver: %s", exc)
        if group is not None:
            with contextlib.suppress(Exception):
                NodeGroup(group, [], [], share, named=True).close()


def _until_registered(names: list[str]) -> None:
    """Wait (briefly) until Ray knows the actors by their names: Ray registers a new actor in the background, and a
    submitter that exits at once (``air run``) must not take their registration with it."""
    import ray

    deadline = time.monotonic() + _REGISTER_SECONDS
    for name in names:
        while time.monotonic() < deadline:
            try:
                ray.get_actor(name, namespace=PARKED_NAMESPACE)
                break
            except ValueError:
                time.sleep(0.01)


def take(record: Path, share: dict[str, float], check_hosts: Callable[[list[str]], None]) -> NodeGroup | None:
    """The actors started for this driver (``record``), claimed; None when none were, or they were not ready (then
    freed). ``check_hosts`` sees their hosts first, and may refuse them by raising (they are freed)."""
    import ray

    found = _read(record)
    if found is None:
        return None
    group, names = found
    agents = []
    try:
        ready, _ = ray.wait([group.ready()], timeout=_READY_SECONDS)
        if not ready:
            raise LookupError(f"their nodes were not free within {_READY_SECONDS:g} s")
        check_hosts(bundle_hosts(group))
        agents = [ray.get_actor(name, namespace=PARKED_NAMESPACE) for name in names]
        driver = ray.get_runtime_context().get_job_id()
        claimed = ray.get([agent.claim.remote(driver) for agent in agents], timeout=REPLY_SECONDS)
        if None in claimed:
            raise LookupError("their time to wait was over")
        infos = ray.get([agent.info.remote() for agent in agents], timeout=REPLY_SECONDS)
    except (LookupError, ValueError, ray.exceptions.RayError) as exc:
        log.info("started node actors not taken: %s", exc)
        NodeGroup(group, agents, [], share, named=True).close()
        return None
    except BaseException:
        NodeGroup(group, agents, [], share, named=True).close()
        raise
    log.info("took the %d node actor(s) started ahead of this driver", len(agents))
    return NodeGroup(group, agents, [NodeInfo(**info) for info in infos], share, named=True)


def drop(record: Path) -> None:
    """Free the actors of ``record`` if nobody took them (their driver does not need them)."""
    found = _read(record)
    if found is not None:
        with contextlib.suppress(Exception):  # gone already
            NodeGroup(found[0], [], [], {}, named=True).close()


def _read(record: Path):
    """The placement group and actor names ``record`` holds, the record removed; None when there is none."""
    import ray
    from ray.util.placement_group import PlacementGroup

    try:
        text = record.read_bytes()
    except FileNotFoundError:
        return None
    record.unlink()
    try:
        found = json.loads(text)
        return PlacementGroup(ray.PlacementGroupID(bytes.fromhex(found["group"]))), list(found["names"])
    except (ValueError, TypeError, KeyError) as exc:
        log.warning("%s is not a record of started node actors (%s): ignored", record, exc)
        return None
