"""The node-run driver's own logic at unit level, with a fake node group and a clock the test moves: the failure
grace, a lost node confirmed or found alive again, a node that answers late, an agent that raised. The Ray tests keep
what only a real cluster shows (a killed node's actor, a real placement)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from jupyter_air.cluster import node_run
from jupyter_air.cluster.node_run import NodeFailed, NodeRun, NodeUnreachable
from jupyter_air.cluster.placement import REPLY_SECONDS, Answers, NodeInfo

SILENT = object()  # an answer that never comes


class ActorError(Exception):
    """Stands for ray.exceptions.RayActorError."""


class TaskError(Exception):
    """Stands for ray.exceptions.RayTaskError: ``cause`` is what the agent raised."""

    def __init__(self, cause: BaseException):
        super().__init__(str(cause))
        self.cause = cause


class Ref:
    """A pending answer of one agent's method, resolved when asked (so an agent's state may change meanwhile)."""

    def __init__(self, agent: FakeAgent, method: str, args: tuple):
        self.agent, self.method, self.args = agent, method, args

    def resolve(self):
        answer = self.agent.answers.get(self.method, None)
        return answer(*self.args) if callable(answer) else answer


class FakeAgent:
    """An agent whose ``answers[method]`` is a value, :data:`SILENT`, an exception, or a function of the args."""

    def __init__(self, **answers):
        self.answers = {"poll": lambda offsets: {"running": True, "failed": False, "chunks": {}}, **answers}
        self.calls: list[tuple[str, tuple]] = []

    def __getattr__(self, method: str):
        def remote(*args):
            self.calls.append((method, args))
            return Ref(self, method, args)

        return SimpleNamespace(remote=remote)

    def asked(self, method: str) -> list[tuple]:
        return [args for name, args in self.calls if name == method]


def outcome(ref: Ref):
    """The ref's answer (an agent's error is one too), the same each time once it came, as Ray's refs."""
    if not hasattr(ref, "answer"):
        try:
            answer = ref.resolve()
        except Exception as exc:  # noqa: BLE001 - an agent's error is its answer here
            answer = exc
        if answer is SILENT:
            return SILENT
        ref.answer = answer
    return ref.answer


class FakeRay:
    exceptions = SimpleNamespace(RayActorError=ActorError, RayTaskError=TaskError)

    @staticmethod
    def wait(refs, num_returns, timeout):
        ready = [ref for ref in refs if outcome(ref) is not SILENT][:num_returns]
        return ready, [ref for ref in refs if ref not in ready]

    @staticmethod
    def get(ref, timeout=None):
        answer = outcome(ref)
        if isinstance(answer, Exception):
            raise answer
        return answer


class FakeGroup:
    """A node group of fake agents; ``alive_again[node]`` is what confirming a lost node finds."""

    def __init__(self, *agents: FakeAgent):
        self.agents = list(agents)
        self.infos = [
            NodeInfo(i, f"id-{i}", f"10.0.0.{i}", f"host-{i}", f"host-{i}", 100 + i) for i in range(len(agents))
        ]
        self.alive_again: dict[int, bool] = {}

    def gather(self, refs: dict) -> Answers:
        values, errors, late = [None] * len(self.agents), {}, []
        for ref, node in refs.items():
            answer = outcome(ref)
            if answer is SILENT:
                late.append(node)
            elif isinstance(answer, Exception):
                errors[node] = answer
            else:
                values[node] = answer
        return Answers(values, errors, late)

    def answers_again(self, node: int, exc=None) -> bool:
        return self.alive_again.get(node, False)


@pytest.fixture
def clock(monkeypatch):
    """The driver's clock, moved by the test (and by the driver's own sleeps)."""
    now = SimpleNamespace(t=1000.0)
    fake_time = SimpleNamespace(monotonic=lambda: now.t, sleep=lambda s: setattr(now, "t", now.t + s))
    monkeypatch.setattr(node_run, "time", fake_time)
    monkeypatch.setattr(node_run, "ray_module", lambda: FakeRay)
    return now


def running_run(*agents: FakeAgent) -> NodeRun:
    run = NodeRun(FakeGroup(*agents), [{} for _ in agents])
    run.start("start_work", lambda node: (node,))
    return run


def test_after_one_node_fails_the_others_are_stopped_once_the_grace_is_over_not_before(clock):
    # Given two nodes at work, and node 0's work then failing while node 1's still runs
    def failed(offsets):
        return {"running": False, "failed": True, "chunks": {}}

    nodes = FakeAgent(wait=0, poll=failed), FakeAgent(wait=SILENT)
    run = running_run(*nodes)
    assert [agent.asked("start_work") for agent in nodes] == [[(0,)], [(1,)]]

    # When the driver follows them within the grace
    run.join(timeout=0.1)
    clock.t += node_run.FAILURE_GRACE_SECONDS - 0.5
    run.join(timeout=0.1)
    # Then node 1 is left alone (it may still end by itself)
    assert nodes[1].asked("stop") == [] and run.running

    # When the grace is over, Then node 1 is stopped, with the grace for its own SIGTERM, and node 0 is not asked
    clock.t += 1
    run.join(timeout=0.1)
    assert nodes[1].asked("stop") == [(node_run.FAILURE_GRACE_SECONDS,)] and nodes[0].asked("stop") == []


def test_a_node_whose_actor_errs_is_lost_only_once_confirmed(clock):
    # Given node 1's actor erring on a poll
    gone = FakeAgent(poll=ActorError("The actor died unexpectedly"))
    run = running_run(FakeAgent(), gone)

    # When the confirmation finds it answering again (Ray called the error transient), Then the run goes on
    run.group.alive_again[1] = True
    run.poll()
    assert run.states[1] is None and run.running

    # When it does not answer again, Then it is lost, named, with Ray's words
    run.group.alive_again[1] = False
    with pytest.raises(NodeUnreachable) as lost:
        run.poll()
    assert lost.value.node == 1 and "its actor is gone (ActorError: The actor died unexpectedly)" in str(lost.value)
    assert str(lost.value).startswith("node 1 (host-1, 10.0.0.1, Ray node id-1) was lost")


def test_a_node_whose_end_errs_is_followed_again_when_it_answers_again(clock):
    # Given node 1's wait for its end erring once, and the node answering a ping afterwards
    answers = iter([ActorError("transient"), SILENT])

    def wait():
        answer = next(answers, SILENT)
        if isinstance(answer, Exception):
            raise answer
        return answer

    node = FakeAgent(wait=wait)
    run = running_run(FakeAgent(wait=SILENT), node)
    run.group.alive_again[1] = True

    # When the driver follows the nodes, Then it waits for node 1's end anew instead of calling it lost
    run.join(timeout=0.1)
    assert len(node.asked("wait")) == 2 and run.running


def test_a_node_that_does_not_answer_in_time_is_lost(clock):
    run = running_run(FakeAgent(), FakeAgent(poll=SILENT))

    with pytest.raises(NodeUnreachable) as late:
        run.poll()

    assert late.value.node == 1 and late.value.reason == f"it did not answer within {REPLY_SECONDS:g} s"


def test_a_late_node_that_answers_pings_is_busy_and_its_answer_awaited(clock):
    # Given node 1 whose poll answers only on the third look (its CPUs taken), and whose actor answers pings
    looks = []

    def slow_poll(offsets):
        looks.append(offsets)
        return SILENT if len(looks) < 3 else {"running": True, "failed": False, "chunks": {}}

    run = running_run(FakeAgent(), FakeAgent(poll=slow_poll))
    run.group.alive_again[1] = True

    # When the driver polls, Then it waits for the answer instead of calling the node lost
    run.poll()
    assert len(looks) == 3 and run.states[1]["running"]


def test_a_node_that_answers_pings_but_never_the_request_is_lost_after_the_busy_rounds(clock):
    run = running_run(FakeAgent(), FakeAgent(poll=SILENT))
    run.group.alive_again[1] = True

    with pytest.raises(NodeUnreachable) as late:
        run.poll()

    seconds = node_run.BUSY_ROUNDS * REPLY_SECONDS
    assert (
        late.value.node == 1
        and late.value.reason == f"it did not answer within {seconds:g} s, though it answered pings"
    )


def test_an_agent_that_raised_fails_the_run_with_what_it_raised(clock):
    cause = ValueError("no GPU 3 on this node")
    run = NodeRun(FakeGroup(FakeAgent(), FakeAgent(start_work=TaskError(cause))), [{}, {}])

    with pytest.raises(NodeFailed) as failed:
        run.start("start_work", lambda node: (node,))

    assert failed.value.node == 1 and failed.value.cause is cause and "no GPU 3" in str(failed.value)


def test_stop_asks_every_node_once_and_ignores_the_ones_that_cannot_answer(clock):
    nodes = FakeAgent(), FakeAgent(poll=ActorError("gone"), stop=ActorError("gone"))
    run = running_run(*nodes)

    run.stop(grace_seconds=2.0)
    run.stop(grace_seconds=2.0)

    assert [agent.asked("stop") for agent in nodes] == [[(2.0,)], [(2.0,)]] and not run.running


def test_an_interrupt_during_rays_wait_reaches_the_caller_as_the_interrupt(clock, monkeypatch):
    # Given two nodes at work, and Ray's wait hit by a kernel interrupt: its compiled code returns with the
    # interrupt set, which Python turns into a SystemError caused by it
    def interrupted(refs, num_returns, timeout):
        try:
            raise KeyboardInterrupt
        except KeyboardInterrupt as exc:
            raise SystemError("<cyfunction CoreWorker.wait> returned a result with an exception set") from exc

    run = running_run(FakeAgent(wait=SILENT), FakeAgent(wait=SILENT))
    monkeypatch.setattr(FakeRay, "wait", staticmethod(interrupted))

    # When the driver follows them, Then the caller gets the KeyboardInterrupt (the call stops every node for it)
    with pytest.raises(KeyboardInterrupt):
        run.join(timeout=0.1)
