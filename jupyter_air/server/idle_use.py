"""Idle GPU holders count as use: each GPU that a kernel of this server holds while idle is its user's use in the GPU
ledger's fair share, from when the kernel went idle on it, as if a claim had held it (a kernel sitting on GPU memory
keeps others off that GPU as a running call does)."""

from __future__ import annotations

import getpass
from collections.abc import Callable

from ..home import air_home
from ..workloads.state.ledger import GpuLedger
from ..workloads.state.store import JobStore


class IdleUse:
    """Records, after each idle-holder check, the time since the last one that each GPU of this server's node was
    held by an idle kernel; a GPU no longer held idle starts afresh. ``ledger`` is made on first use (AIR_HOME's)."""

    def __init__(self, ledger: Callable[[], GpuLedger], user: str):
        self._open = ledger
        self._ledger: GpuLedger | None = None
        self.user = user
        self._until: dict[int, int] = {}  # GPU -> epoch ms up to which its idle hold is recorded

    @classmethod
    def of_air_home(cls) -> IdleUse:
        """This server's user's idle holds, in AIR_HOME's ledger (the one its kernels' calls and jobs claim from)."""
        return cls(lambda: GpuLedger(JobStore(air_home())), getpass.getuser())

    def record(self, holders: list[dict], now_ms: int) -> list[tuple[int, int, int]]:
        """Record the idle holds of ``holders`` (:meth:`~jupyter_air.gpu.idle.IdleHolders.check`'s rows) up to
        ``now_ms``; the ``(GPUs, start ms, end ms)`` spans recorded."""
        since: dict[int, int] = {}
        for row in holders:
            if row["node_id"] is None:  # this server's node: its ledger; a Ray node's GPUs are Ray's to share
                gpu = row["gpu_index"]
                since[gpu] = min(since.get(gpu, now_ms), row["idle_since_ms"])
        spans = [(1, max(start, self._until.get(gpu, start)), now_ms) for gpu, start in sorted(since.items())]
        spans = [span for span in spans if span[2] > span[1]]
        self._until = {gpu: now_ms for gpu in since}
        if spans:
            self._ledger = self._ledger or self._open()
            self._ledger.record_use(self.user, spans)
        return spans
