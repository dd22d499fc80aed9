"""One actor per node: a STRICT_SPREAD placement group with one bundle per node, each bundle taken by one actor.

The actor asks for its bundle's whole resources, so Ray gives it the bundle's GPUs (``CUDA_VISIBLE_DEVICES``),
and every process it starts inherits them. Bundle ``i`` is node ``i``: node 0 holds ranks ``0..L-1``.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass

from .errors import PlacementError
from .held import waiting_hint
from .hosts import host_of
from .keeper import PARKED_NAMESPACE, free_parked

#: Seconds between checks of a placement that waits for resources (and for a cancel).
_WAIT_STEP_SECONDS = 0.5
#: Seconds between two looks at who holds the nodes a placement waits for (its message is updated when it changes).
_ANNOUNCE_SECONDS = 10.0
#: Seconds the new actors may take to start and say where they run.
_START_SECONDS = 120.0
#: Concurrent calls per actor: a status poll or a stop must never queue behind a blocking wait.
ACTOR_CONCURRENCY = 4
#: Seconds a node may leave a request unanswered before it counts as lost.
REPLY_SECONDS = 30.0
#: Seconds an actor Ray calls unavailable (a transient error) is asked again before its node counts as lost.
_CONFIRM_SECONDS = 2.0


@dataclass(frozen=True)
class Answers:
    """What the actors answered to one request each (:meth:`NodeGroup.gather`), in node order."""

    values: list  # each node's answer; None where it raised or did not answer
    errors: dict[int, BaseException]  # node -> the Ray error its request raised
    late: list[int]  # nodes that did not answer within REPLY_SECONDS


@dataclass(frozen=True)
class NodeInfo:
    """Where one actor of a group runs."""

    index: int
    node_id: str
    ip: str
    hostname: str
    host: str
    pid: int

    def describe(self) -> str:
        return f"node {self.index} ({self.hostname}, {self.ip}, Ray node {self.node_id[:12]})"

    def to_json(self) -> dict:
        return {"node": self.index, "hostname": self.hostname, "ip": self.ip, "ray_node_id": self.node_id}


def bundle(gpus: int, cpus: int, extra: dict[str, float] | None = None) -> dict[str, float]:
    """One node's share: ``cpus`` CPUs, ``gpus`` GPUs (left out when 0) and any custom resources."""
    return {"CPU": cpus, **({"GPU": gpus} if gpus else {}), **(extra or {})}


def describe_bundle(share: dict[str, float]) -> str:
    return ", ".join(f"{value:g} {name}" for name, value in share.items())


def why_never(count: int, share: dict[str, float]) -> str | None:
    """Why ``count`` distinct alive nodes can never each hold ``share`` (None when enough nodes are big enough)."""
    import ray

    alive = [n for n in ray.nodes() if n.get("Alive")]
    fitting = [n for n in alive if all(n["Resources"].get(k, 0) >= v for k, v in share.items())]
    if len(fitting) >= count:
        return None
    sizes = "; ".join(
        f"{n['NodeManagerAddress']}: {describe_bundle({k: n['Resources'].get(k, 0) for k in share})}" for n in alive
    )
    return (
        f"{count} node(s) with {describe_bundle(share)} each were asked for, but only {len(fitting)} of the cluster's "
        f"{len(alive)} node(s) are that large ({sizes or 'no node'}): ask for fewer nodes or fewer GPUs per node"
    )


class NodeGroup:
    """``count`` actors of ``actor_class`` (a plain class), one per node, made by :meth:`place`."""

    def __init__(self, group, agents: list, infos: list[NodeInfo], share: dict[str, float], named: bool = False):
        self.group = group
        self.agents = agents
        self.infos = infos
        self.share = share
        #: Detached actors with names in :data:`PARKED_NAMESPACE`: they outlive the driver that placed them.
        self.named = named
        self.closed = False

    @classmethod
    def place(
        cls,
        actor_class: type,
        count: int,
        share: dict[str, float],
        *,
        init_args: tuple = (),
        wait_seconds: float | None = None,
        cancelled: Callable[[], bool] = lambda: False,
        waiting: Callable[[str], None] = lambda message: None,
        check_hosts: Callable[[list[str]], None] = lambda hosts: None,
        names: list[str] | None = None,
    ) -> NodeGroup | None:
        """Reserve one bundle per node and start the actors; None when ``cancelled()`` while waiting.

        Raises :class:`PlacementError` at once when the cluster is too small, or after ``wait_seconds``
        (None: wait as long as it takes) while busy nodes hold the resources. ``check_hosts`` sees each
        bundle's host before any actor starts, and may refuse them by raising. With ``names`` (one per node) the
        group and its actors are detached, the actors named in :data:`PARKED_NAMESPACE`: they outlive this driver
        until someone kills them (:meth:`close`, or the actors themselves once parked too long).
        """
        import ray
        from ray.util.placement_group import placement_group, remove_placement_group

        never = why_never(count, share)
        if never:
            raise PlacementError(never)
        lifetime = {"lifetime": "detached"} if names else {}
        group = placement_group([dict(share) for _ in range(count)], strategy="STRICT_SPREAD", **lifetime)
        try:
            if not _wait_ready(group, count, share, wait_seconds, cancelled, waiting):
                remove_placement_group(group)
                return None
            check_hosts(bundle_hosts(group))
            agents = start_actors(actor_class, group, share, count, init_args, names)
            placed = cls(group, agents, [], share, named=bool(names))
            try:
                infos = ray.get([a.info.remote() for a in agents], timeout=_START_SECONDS)
                placed.infos = [NodeInfo(**info) for info in infos]
            except BaseException:
                placed.close()
                raise
            return placed
        except BaseException:
            with contextlib.suppress(Exception):
                remove_placement_group(group)
            raise

    @property
    def hosts(self) -> list[str]:
        return [info.host for info in self.infos]

    def gather(self, refs: dict) -> Answers:
        """Wait up to ``REPLY_SECONDS`` for every pending request (``refs``: object ref -> node)."""
        import ray

        values, errors = [None] * len(self.agents), {}
        ready, late = ray.wait(list(refs), num_returns=len(refs), timeout=REPLY_SECONDS)
        for ref in ready:
            try:
                values[refs[ref]] = ray.get(ref)
            except ray.exceptions.RayError as exc:
                errors[refs[ref]] = exc
        return Answers(values, errors, [refs[ref] for ref in late])

    def answers_again(self, node: int, exc: BaseException | None = None) -> bool:
        """True when the actor of ``node`` (whose request raised ``exc``, if any) answers a ping within a few
        seconds, as Ray calls some of its errors transient, and its raylet still runs. False: the node is lost."""
        import ray

        if isinstance(exc, ray.exceptions.ActorDiedError):
            return False
        deadline = time.monotonic() + _CONFIRM_SECONDS
        while time.monotonic() < deadline:
            try:
                return ray.get(self.agents[node].ping.remote(), timeout=0.5)
            except (ray.exceptions.RayActorError, ray.exceptions.GetTimeoutError):
                time.sleep(0.2)
        return False

    def close(self) -> None:
        """Kill every actor (Ray kills the processes of its group; the node's guard stops the rest) and free the
        bundles. Safe to call twice."""
        if self.closed:
            return
        self.closed = True
        import ray
        from ray.util.placement_group import remove_placement_group

        for agent in self.agents:
            with contextlib.suppress(Exception):  # an actor on a lost node is already gone
                ray.kill(agent)
        with contextlib.suppress(Exception):
            remove_placement_group(self.group)


def start_actors(actor_class: type, group, share: dict[str, float], count: int, init_args: tuple, names=None) -> list:
    """Start one actor of ``actor_class`` (a plain class) per bundle of ``group``, bundle ``i`` taken by actor ``i``
    (made with ``i, *init_args``); with ``names``, detached and named in :data:`PARKED_NAMESPACE`. Returns at once."""
    import ray
    from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

    remote = ray.remote(max_concurrency=ACTOR_CONCURRENCY)(actor_class)
    resources = {k: v for k, v in share.items() if k not in ("CPU", "GPU")}
    return [
        remote.options(
            num_cpus=share.get("CPU", 0),
            num_gpus=share.get("GPU", 0),
            resources=resources or None,
            scheduling_strategy=PlacementGroupSchedulingStrategy(
                placement_group=group, placement_group_bundle_index=index
            ),
            **({"name": names[index], "namespace": PARKED_NAMESPACE, "lifetime": "detached"} if names else {}),
        ).remote(index, *init_args)
        for index in range(count)
    ]


def bundle_hosts(group) -> list[str]:
    """The host of each bundle of a ready placement group, in bundle order (from the cluster's node table)."""
    import ray

    nodes = {n["NodeID"]: n for n in ray.nodes()}
    placed = ray.util.placement_group_table(group)["bundles_to_node_id"]
    return [host_of(nodes[placed[i]].get("Labels"), nodes[placed[i]]["NodeManagerAddress"]) for i in sorted(placed)]


def _wait_ready(group, count, share, wait_seconds, cancelled, waiting) -> bool:
    import ray

    ready = group.ready()
    deadline = None if wait_seconds is None else time.monotonic() + wait_seconds
    announced, said_at = None, 0.0
    unparked = False
    while True:
        done, _ = ray.wait([ready], timeout=_WAIT_STEP_SECONDS)
        if done:
            return True
        if not unparked:  # nodes this user's remote calls parked are the first to give way
            unparked = True
            free_parked()
        if cancelled():
            return False
        if time.monotonic() - said_at >= _ANNOUNCE_SECONDS:  # who holds the nodes may change while it waits
            said_at = time.monotonic()
            message = f"waiting for {count} node(s) with {describe_bundle(share)} free on the Ray cluster"
            message += waiting_hint()
            if message != announced:
                waiting(message)
                announced = message
        if deadline is not None and time.monotonic() > deadline:
            raise PlacementError(
                f"the Ray cluster had no {count} distinct node(s) with {describe_bundle(share)} free within "
                f"{wait_seconds:g} s (free now: {describe_bundle(ray.available_resources()) or 'nothing'}); "
                f"other work holds them{waiting_hint()}: wait and run again, or ask for fewer"
            )
