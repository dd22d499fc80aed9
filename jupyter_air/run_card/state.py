"""What a run card shows, as plain data: running, then finished, failed or killed; bounded rank output."""

from __future__ import annotations

import collections
import itertools
import time
from dataclasses import dataclass, field

RUNNING, FINISHED, FAILED, KILLED = "RUNNING", "FINISHED", "FAILED", "KILLED"
#: A rank's state once the call ended otherwise than FINISHED, when it is not the rank that failed.
STOPPED = "STOPPED"
#: Lines of each rank kept in the cell (the run's ``logs/`` artifacts keep every line).
MAX_LINES_PER_RANK = 200
#: Longest line kept, in characters (a progress bar redrawn with ``\r`` can make one huge line).
MAX_LINE_CHARS = 2000
#: Up to this many ranks the card has one row per rank; beyond it, one row per node.
MAX_RANK_ROWS = 16


@dataclass(frozen=True)
class Failure:
    """Where and why a call failed, as the card shows it."""

    message: str
    rank: int | None = None
    node: int | None = None
    exitcode: int | None = None


@dataclass
class MetricSeries:
    """A metric's latest value and step, and the recent values its sparkline draws."""

    key: str
    value: float
    step: int
    timestamp_ms: int
    points: list[float] = field(default_factory=list)


@dataclass(frozen=True)
class Energy:
    """The run's GPU energy (summed over GPUs and nodes), logged when it ends."""

    watt_hours: float
    simulated: bool


@dataclass(frozen=True)
class RunRef:
    """The card's run and experiment, and their links (None where there is no UI to open them in)."""

    id: str
    name: str
    url: str | None
    experiment_name: str
    experiment_url: str | None


@dataclass(frozen=True)
class Header:
    """The run and where it runs: fixed for the card's life."""

    run: RunRef
    kind: str  # "distributed": ranks in worker processes; "kernel": the cell runs in the kernel itself
    world_size: int
    nodes: int
    gpus: tuple[str, ...]  # as CUDA_VISIBLE_DEVICES names them
    job_run_id: str | None = None  # the job a remote call runs as: follow it again with %air_attach


class CardState:
    """The card's state; every change bumps :attr:`revision`, so a view knows when to redraw."""

    def __init__(
        self,
        header: Header,
        *,
        max_lines_per_rank: int = MAX_LINES_PER_RANK,
        clock=time.time,
        started_ms: int | None = None,
    ):
        self.header = header
        self.status = RUNNING
        self.started_ms = int(clock() * 1000) if started_ms is None else started_ms  # the run's own, when known
        self.ended_ms: int | None = None
        self.reason: str | None = None
        self.failure: Failure | None = None
        self.metrics: list[MetricSeries] = []
        self.energy: Energy | None = None
        self.revision = 0
        self._clock = clock
        ranks = header.world_size if header.kind == "distributed" else 0
        self._lines = [collections.deque(maxlen=max_lines_per_rank) for _ in range(ranks)]
        self._dropped = [0] * ranks
        self._last = [("", -1)] * ranks
        self._rank_states: list[tuple[str, int | None]] = [(RUNNING, None)] * ranks
        self._order = itertools.count()

    @property
    def running(self) -> bool:
        return self.status == RUNNING

    def add_lines(self, lines: list[tuple[int, str]]) -> None:
        """New output lines ``(rank, text)``; each rank keeps its last lines, counting the ones let go."""
        for rank, text in lines:
            seq = next(self._order)
            text = text if len(text) <= MAX_LINE_CHARS else text[: MAX_LINE_CHARS - 1] + "…"
            kept = self._lines[rank]
            if len(kept) == kept.maxlen:
                self._dropped[rank] += 1
            kept.append((seq, text))
            self._last[rank] = (text, seq)
        if lines:
            self.revision += 1

    def set_metrics(self, metrics: list[MetricSeries], energy: Energy | None = None) -> None:
        self.metrics, self.energy = metrics, energy
        self.revision += 1

    def finish(
        self, status: str, *, reason: str | None = None, failure: Failure | None = None, ended_ms: int | None = None
    ) -> None:
        """End the card (once): FINISHED, FAILED (with where and why) or KILLED (with why), at ``ended_ms`` (the
        run's own end, when known) or now."""
        if not self.running:
            return
        if status not in (FINISHED, FAILED, KILLED):
            raise ValueError(f"a run card ends FINISHED, FAILED or KILLED, not {status!r}")
        self.status, self.reason, self.failure = status, reason, failure
        self.ended_ms = int(self._clock() * 1000) if ended_ms is None else ended_ms
        for rank in range(len(self._rank_states)):
            self._rank_states[rank] = self._end_state(rank)
        self.revision += 1

    def _end_state(self, rank: int) -> tuple[str, int | None]:
        """A rank's state and exit code once the call ended."""
        if self.status == FINISHED:
            return FINISHED, None
        if self.failure is not None and self.failure.rank == rank:
            return FAILED, self.failure.exitcode
        return STOPPED, None

    def seconds(self) -> float:
        end = self.ended_ms if self.ended_ms is not None else int(self._clock() * 1000)
        return max(0.0, (end - self.started_ms) / 1000)

    def rows(self) -> list[dict]:
        """One row per rank (per node when there are many ranks): its state and last output line."""
        ranks = len(self._lines)
        if ranks <= MAX_RANK_ROWS:
            return [self._row(f"rank {r}", [r]) for r in range(ranks)]
        per_node = -(-ranks // self.header.nodes)
        groups = [list(range(n * per_node, min(ranks, (n + 1) * per_node))) for n in range(self.header.nodes)]
        return [self._row(f"node {n} (ranks {g[0]}-{g[-1]})", g) for n, g in enumerate(groups) if g]

    def _row(self, name: str, ranks: list[int]) -> dict:
        order = (FAILED, RUNNING, STOPPED, FINISHED)  # a group shows its most telling state
        state, exitcode = min((self._rank_states[r] for r in ranks), key=lambda s: order.index(s[0]))
        line = max((self._last[r] for r in ranks), key=lambda last: last[1])[0]
        return {"name": name, "state": state.lower(), "exitcode": exitcode, "line": line}

    def output(self) -> str:
        """Every rank's kept lines, ``[rank N]``-prefixed, in the order they were written."""
        merged = sorted((seq, rank, text) for rank, kept in enumerate(self._lines) for seq, text in kept)
        return "\n".join(f"[rank {rank}] {text}" for _, rank, text in merged)

    def dropped_lines(self) -> int:
        """Lines no longer kept in the card (they are in the run's ``logs/`` artifacts)."""
        return sum(self._dropped)
