"""One Ray node's GPUs, sampled on that node by an actor (:mod:`~jupyter_air.gpu.cluster` starts one per node)."""

from __future__ import annotations

from jupyter_air.cluster.agent import NodeAgent

from .attribution import kernel_of
from .sampler import Sampler, Snapshot
from .sources import open_source


class NodeSampler(NodeAgent):
    """One node's GPUs, sampled as the server samples its own."""

    def __init__(self, index: int, kind: str, count: int, interval: float, history: float, idle: float):
        super().__init__(index)
        self.sampler = Sampler(lambda: open_source(kind, count), interval, history, idle)
        self.sampler.start()

    def snapshot(self, since_ms: int | None, refresh: bool) -> Snapshot:
        """The samples after ``since_ms``; samples now first when asked to or when sampling had paused."""
        self.sampler.touch()
        if refresh or not self.sampler.sampling or not len(self.sampler):
            self.sampler.sample_now()
        return self.sampler.snapshot(since_ms)

    def holdings(self, actors: dict[int, str], since_ms: int | None) -> tuple[list, dict[int, str]]:
        """For the idle-holder check: the readings after ``since_ms`` (:meth:`Sampler.readings_since`) and which
        GPU processes of the newest are an actor of ``actors`` (``{pid: kernel id}``) or its child."""
        samples = self.sampler.readings_since(since_ms)
        known: dict[int, str | None] = {}
        processes = samples[-1][1].processes if samples else []
        return samples, {p.pid: owner for p in processes if (owner := kernel_of(p.pid, actors, known))}
