"""The one driver of work spread over several Ray nodes, for notebook calls and workload attempts alike.

Each node's agent (a :class:`~jupyter_air.cluster.agent.NodeAgent` of a :class:`NodeGroup`) speaks one protocol:
``start(...)`` the work, ``poll(offsets)`` for the new bytes of its files and whether it still runs or failed,
``wait()`` until it ended (the pending answer whose error is how Ray says the node died), ``stop(grace)``,
``sample_metrics(...)``. The driver keeps one pending ``wait()`` per node, copies each node's files as they grow,
confirms a node it cannot reach before calling it lost (:class:`NodeUnreachable`), waits longer for a node that is
late but answers pings (busy: importing, swapping, its CPUs taken by the work), gives the other nodes one grace
once a node's work failed, and takes node 0's port from node 0's agent. What the work's owner makes of the answers (a
call's results and root cause, an attempt's exit codes) stays with the owner."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping

from . import mirror
from .connect import ray_module
from .placement import REPLY_SECONDS, Answers, NodeGroup

#: Seconds the other nodes get to end by themselves once one node's work failed, before they are stopped.
FAILURE_GRACE_SECONDS = 5.0
#: Times ``REPLY_SECONDS`` a node that is late with an answer but answers pings (busy, not lost) is waited for.
BUSY_ROUNDS = 4


class NodeUnreachable(RuntimeError):
    """A node stopped answering (its machine, raylet or actor died); ``node`` names it, ``reason`` says how."""

    def __init__(self, node: int, where: str, reason: str):
        super().__init__(f"{where} was lost: {reason}")
        self.node = node
        self.where = where
        self.reason = reason


class NodeFailed(RuntimeError):
    """A node's agent raised (its work could not start there); ``cause`` is what it raised."""

    def __init__(self, node: int, where: str, cause: BaseException):
        super().__init__(f"{where}: {cause}")
        self.node = node
        self.cause = cause


class NodeRun:
    """The work of one call or attempt on every node of ``group``; ``copies[i]`` maps each name node ``i``'s
    agent polls to the local file its bytes are copied to."""

    def __init__(self, group: NodeGroup, copies: list[Mapping]):
        self.group = group
        self.copies = copies
        #: Each node's last answer to ``poll`` (None before the first).
        self.states: list[dict | None] = [None] * len(group.agents)
        self.stopped = False
        self._waits: dict = {}
        self._failed_at: float | None = None

    @property
    def running(self) -> bool:
        return not self.stopped and any(state is None or state["running"] for state in self.states)

    def describe(self, node: int) -> str:
        return self.group.infos[node].describe()

    def port(self) -> int:
        """A port on node 0's address for the work's rendezvous, held by node 0's agent until its work starts."""
        agent, info = self.group.agents[0], self.group.infos[0]
        return ray_module().get(agent.reserve_port.remote(info.ip), timeout=REPLY_SECONDS)

    def ask(
        self, method: str, args: Callable[[int], tuple] = lambda node: (), nodes: Iterable[int] | None = None
    ) -> list:
        """Every node's answer to ``agent.<method>(*args(node))``, in node order (None for nodes not asked).

        Raises :class:`NodeUnreachable` for a node that cannot answer, :class:`NodeFailed` for one whose agent raised.
        """
        agents = self.group.agents
        chosen = range(len(agents)) if nodes is None else list(nodes)
        if not chosen:
            return [None] * len(agents)
        return self._answers({getattr(agents[i], method).remote(*args(i)): i for i in chosen}, quiet=False)

    def start(self, method: str, args: Callable[[int], tuple]) -> None:
        """Start the work on every node with ``agent.<method>(*args(node))``, then follow each node's end."""
        self.ask(method, args)
        self._waits = {agent.wait.remote(): i for i, agent in enumerate(self.group.agents)}

    def join(self, timeout: float) -> None:
        """Wait up to ``timeout`` seconds for a node to end, copy the new bytes, and stop the others once the
        failure grace is over; raises :class:`NodeUnreachable`."""
        ray = ray_module()
        if self._waits:
            try:
                ready, _ = ray.wait(list(self._waits), num_returns=1, timeout=timeout)
            except SystemError as exc:  # an interrupt during Ray's wait comes back as Ray's SystemError
                if isinstance(exc.__cause__, KeyboardInterrupt):
                    raise exc.__cause__ from None
                raise
            for ref in ready:
                node = self._waits.pop(ref)
                try:
                    ray.get(ref)
                except ray.exceptions.RayActorError as exc:
                    self._confirm(node, exc)
                    self._waits[self.group.agents[node].wait.remote()] = node
        else:
            time.sleep(timeout)
        self.poll()
        if self._failed_at is not None and self.running and time.monotonic() - self._failed_at > FAILURE_GRACE_SECONDS:
            # A node failed and the others neither ended nor failed: they wait on a peer that is gone.
            waiting = [i for i, state in enumerate(self.states) if state is None or state["running"]]
            self.ask("stop", lambda node: (FAILURE_GRACE_SECONDS,), nodes=waiting)
            self.poll()

    def poll(self, quiet: bool = False) -> None:
        """Copy each node's new bytes and keep its answer in :attr:`states` (``quiet``: skip nodes that fail)."""
        agents = self.group.agents
        refs = {agents[i].poll.remote(mirror.offsets(copies)): i for i, copies in enumerate(self.copies)}
        for node, answer in enumerate(self._answers(refs, quiet=quiet)):
            if answer is None:
                continue
            mirror.append(self.copies[node], answer.pop("chunks"))
            self.states[node] = answer
            if answer["failed"] and self._failed_at is None:
                self._failed_at = time.monotonic()

    def stop(self, grace_seconds: float) -> None:
        """Stop the work on every node that answers (SIGTERM, SIGKILL after ``grace_seconds``), then copy the rest."""
        if self.stopped:
            return
        self.stopped = True
        agents = self.group.agents
        refs = {agent.stop.remote(grace_seconds): i for i, agent in enumerate(agents)}
        ray_module().wait(list(refs), num_returns=len(refs), timeout=grace_seconds + REPLY_SECONDS)
        self.poll(quiet=True)

    def _answers(self, refs: dict, quiet: bool) -> list:
        """Every node's answer (``refs``: pending answer -> node), None for a node not asked; ``quiet``: None also
        for a node that cannot answer or raised, instead of an error."""
        ray = ray_module()
        got = self.group.gather(refs)
        if quiet:
            return got.values
        got, rounds = self._busy_awaited(refs, got)
        for node, exc in got.errors.items():
            if isinstance(exc, ray.exceptions.RayActorError):
                self._confirm(node, exc)
            elif isinstance(exc, ray.exceptions.RayTaskError):
                raise NodeFailed(node, self.describe(node), exc.cause) from None
            else:
                raise exc
        if got.late:
            node = got.late[0]
            busy = ", though it answered pings" if rounds == BUSY_ROUNDS else ""
            raise NodeUnreachable(
                node, self.describe(node), f"it did not answer within {rounds * REPLY_SECONDS:g} s{busy}"
            )
        return got.values

    def _busy_awaited(self, refs: dict, got: Answers) -> tuple[Answers, int]:
        """``got`` with the answers of late nodes that still answer a ping, waited for up to ``BUSY_ROUNDS`` rounds
        of ``REPLY_SECONDS`` in all; and the rounds waited."""
        rounds = 1
        while got.late and rounds < BUSY_ROUNDS and all(self.group.answers_again(node) for node in got.late):
            more = self.group.gather({ref: node for ref, node in refs.items() if node in got.late})
            values = [more.values[n] if n in got.late else value for n, value in enumerate(got.values)]
            got, rounds = Answers(values, {**got.errors, **more.errors}, more.late), rounds + 1
        return got, rounds

    def _confirm(self, node: int, exc: BaseException) -> None:
        """Return when the node's agent answers again (Ray calls some errors transient), else raise NodeUnreachable."""
        if self.group.answers_again(node, exc):
            return
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        raise NodeUnreachable(node, self.describe(node), f"its actor is gone ({type(exc).__name__}: {first[:300]})")
