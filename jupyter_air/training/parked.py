"""The Ray nodes remote calls park between them: the counterpart of :mod:`.kept` for a call's supervisor, which exits
after each call (a kernel keeps its actors in its own process instead).

A remote call places its node actors detached, named per user and shape in Ray's namespace
:data:`~jupyter_air.cluster.keeper.PARKED_NAMESPACE`; once it ended by itself they are parked for the next remote
call of the same shape, from any kernel of this user, which takes them with their fork servers (PyTorch imported).
Unclaimed for :data:`~jupyter_air.training.kept.KEEP_SECONDS`, each actor frees its nodes itself; meanwhile a keeper
process of this machine (:mod:`~jupyter_air.cluster.keeper`) lists them as held nodes and frees them on Release.
"""

from __future__ import annotations

import hashlib
import logging

from jupyter_air.cluster import keeper
from jupyter_air.cluster.connect import ray_module
from jupyter_air.cluster.keeper import PARKED_NAMESPACE, free_parked, parked_prefix
from jupyter_air.cluster.placement import REPLY_SECONDS, NodeGroup, NodeInfo, describe_bundle
from jupyter_air.training.kept import KEEP_SECONDS

log = logging.getLogger(__name__)


class Parked:
    """Taking and parking the named node actors of remote calls; a call's ``key`` is ``(connection generation,
    nodes, share items)`` as for :class:`~jupyter_air.training.kept.Kept` (the generation is not part of a name)."""

    #: Shapes whose parked actors another call holds now: a new group of that shape is placed without names.
    busy: set[tuple] = set()

    @staticmethod
    def names(key: tuple) -> list[str] | None:
        """The names of this shape's actors, one per node; None when another call holds actors of that name."""
        if key[1:] in Parked.busy:
            return None
        digest = hashlib.sha256(repr(key[1:]).encode()).hexdigest()[:12]
        return [f"{parked_prefix()}{digest}-{node}" for node in range(key[1])]

    @classmethod
    def take(cls, key: tuple) -> NodeGroup | None:
        """This shape's parked actors, claimed for this call; None when none are parked (any of this user's other
        shapes is freed, as a kernel frees its kept nodes of another shape)."""
        ray = ray_module()
        names = cls.names(key)
        free_parked(keep=names or ())  # this user's other shapes, as a kernel frees its kept nodes of another shape
        agents = []
        for name in names or []:
            try:
                agents.append(ray.get_actor(name, namespace=PARKED_NAMESPACE))
            except ValueError:  # none parked (or some gone: those left free their nodes by themselves)
                return None
        claimed = []
        try:
            driver = ray.get_runtime_context().get_job_id()  # they end with this call's supervisor, if not parked
            claimed = ray.get([agent.claim.remote(driver) for agent in agents], timeout=REPLY_SECONDS)
            if claimed[0] is None:  # another call of this shape holds them
                cls.busy.add(key[1:])
                return None
            if None in claimed:  # some expiring: let them all go, place anew
                raise RuntimeError("parked actors expired while claimed")
            infos = ray.get([agent.info.remote() for agent in agents], timeout=REPLY_SECONDS)
        except Exception as exc:  # noqa: BLE001 - a node lost while parked: these actors are not worth keeping
            log.info("parked node actors not taken: %s", exc)
            cls.busy.add(key[1:])  # their names are freed later: this call's group goes without
            group = next((found for found in claimed if found is not None), None)
            NodeGroup(group, agents, [], {}, named=True).close()
            return None
        keeper.dismiss(names)
        return NodeGroup(claimed[0], agents, [NodeInfo(**info) for info in infos], dict(key[2]), named=True)

    @staticmethod
    def keep(key: tuple, group: NodeGroup, address: str) -> None:
        """Park the actors of a call that ended by itself for :data:`KEEP_SECONDS`, with their keeper; a group
        placed without names (another call held the parked ones) is closed."""
        if not group.named:
            group.close()
            return
        ray = ray_module()
        ray.get([agent.park.remote(KEEP_SECONDS, group.group) for agent in group.agents], timeout=REPLY_SECONDS)
        nodes = [info.to_json() for info in group.infos]
        keeper.start(address, Parked.names(key), nodes, describe_bundle(group.share), KEEP_SECONDS)
