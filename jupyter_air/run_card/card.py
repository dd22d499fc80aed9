"""A call's run card in its cell: a live widget in a Jupyter kernel, plain text elsewhere.

In a kernel the output holds the widget view plus a static HTML/text snapshot; one thread per card reads
the run's metrics every few seconds and sends the state at most a few times a second. When the run ends
the output is replaced (same display id) by the final static snapshot and the widget is closed, so a saved
notebook stays readable without a kernel and small.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
import time

from jupyter_air.jupyter_kernel import in_jupyter_kernel
from jupyter_air.run_card.metrics import MetricReader
from jupyter_air.run_card.render import card_json, render_html, render_text
from jupyter_air.run_card.state import KILLED, CardState, Failure, Header, RunRef
from jupyter_air.tracking.lifecycle import status_for
from jupyter_air.tracking.links import links

log = logging.getLogger(__name__)

#: ``widget`` (default in a kernel) or ``text``: plain text, for front ends that cannot show jupyter_air's
#: widget (no JupyterLab extension, e.g. VS Code). Outside a kernel the card is always text.
MODE_ENV = "AIR_RUN_CARD"
#: Seconds between two reads of the run's metrics, and the shortest time between two widget updates.
METRICS_SECONDS = 2.0
PUSH_SECONDS = 0.25
#: Seconds the card waits for its thread at the end (a slow tracking server must not hold the cell).
_JOIN_SECONDS = 2.0


def card_mode() -> str:
    """``widget`` or ``text``: how this process shows run cards."""
    if not in_jupyter_kernel():
        return "text"
    chosen = os.environ.get(MODE_ENV, "widget").strip().lower() or "widget"
    if chosen not in ("widget", "text"):
        raise ValueError(f"{MODE_ENV}={chosen!r}: expected 'widget' or 'text'")
    return chosen


def gpus_in_use(count: int) -> tuple[str, ...]:
    """The devices of the first ``count`` visible GPUs, as ``CUDA_VISIBLE_DEVICES`` names them."""
    visible = [d.strip() for d in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",") if d.strip()]
    return tuple((visible or [str(i) for i in range(count)])[:count])


def header_for(run, *, kind: str, world_size: int, gpus: int, nodes: int = 1) -> Header:
    """The card's fixed part for a described :class:`~jupyter_air.tracking.lifecycle.ManagedRun`."""
    described = RunRef(run.run_id, run.run_name, run.url, run.experiment_name, run.experiment_url)
    return Header(run=described, kind=kind, world_size=world_size, nodes=nodes, gpus=gpus_in_use(gpus))


def header_from_run(
    tracking, info, *, world_size: int, gpus: int, nodes: int = 1, job_run_id: str | None = None
) -> Header:
    """The card's fixed part for a run created elsewhere (job ``job_run_id``'s), from its ``info`` and the store."""
    found = links(info.experiment_id, info.run_id)
    experiment = tracking.get_experiment(info.experiment_id).name
    described = RunRef(info.run_id, info.run_name, found.run, experiment, found.experiment)
    per_node = gpus_in_use(gpus // max(nodes, 1))
    return Header(
        run=described, kind="distributed", world_size=world_size, nodes=nodes, gpus=per_node, job_run_id=job_run_id
    )


def ending_for(exc: BaseException | None, nodes: int = 1) -> tuple[str | None, Failure | None]:
    """What the card says about how a call ended: ``(reason, failure)`` for the exception (None: success)."""
    if exc is None:
        return None, None
    status, error = status_for(exc)
    if status == KILLED:
        return error, None
    rank, kind = getattr(exc, "rank", None), getattr(exc, "exception_type", None)
    node = getattr(exc, "node", None)
    if node is None and rank is not None and nodes == 1:
        node = 0
    message = f"{kind}: {exc.exception_message}" if kind else error
    return None, Failure(message=message or "", rank=rank, node=node, exitcode=getattr(exc, "exitcode", None))


class RunCard:
    """Shows a run as soon as it exists, keeps it up to date while it runs, and leaves its final snapshot."""

    def __init__(self, state: CardState, reader: MetricReader | None, mode: str, stoppable: bool, out=None):
        self.state = state
        self.mode = mode
        self.stoppable = stoppable
        self._reader = reader
        self._out = out
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        self._widget = None
        self._handle = None
        self._pushed = -1

    def _data(self) -> dict:
        with self._lock:
            return {**card_json(self.state), "stoppable": self.stoppable and self.state.running}

    def _print(self, text: str) -> None:
        out = self._out or sys.stdout
        out.write(text + "\n")
        out.flush()

    def show(self, handle=None) -> None:
        """Put the card in the cell (in place of the ``handle`` of its starting card, if any), or print the run's
        first line, and start keeping it up to date."""
        data = self._data()
        if self.mode == "text":
            self._print(render_text(data).splitlines()[0])
            return
        from IPython.display import display

        # Lazy: the widget (ipywidgets) adds 57 ms, paid only by a kernel that shows cards as widgets
        from jupyter_air.run_card.widget import WIDGET_VIEW_MIMETYPE, RunCardWidget

        self._widget = RunCardWidget(card=data)
        bundle = {WIDGET_VIEW_MIMETYPE: self._widget.view_data(), **self._static(data)}
        if handle is None:
            self._handle = display(bundle, raw=True, display_id=True)
        else:
            handle.update(bundle, raw=True)
            self._handle = handle
        self._pushed = self.state.revision
        self._thread = threading.Thread(target=self._keep_up_to_date, name="air-run-card", daemon=True)
        self._thread.start()

    def add_lines(self, lines: list[tuple[int, str]]) -> None:
        """New ``(rank, line)`` output: kept (bounded) in the card, and printed as it comes in text mode."""
        if not lines:
            return
        with self._lock:
            self.state.add_lines(lines)
        if self.mode == "text":
            self._print("\n".join(f"[{self._where(rank)}] {line}" for rank, line in lines))

    def _where(self, rank: int) -> str:
        """``rank 3``, or ``node 1 rank 3`` for a call on several nodes."""
        header = self.state.header
        if header.nodes <= 1:
            return f"rank {rank}"
        return f"node {rank // (header.world_size // header.nodes)} rank {rank}"

    def finish(self, status: str, exc: BaseException | None, ended_ms: int | None = None) -> None:
        """Show the final state: the last metrics, the status and, for a failure, where and why (ended at
        ``ended_ms``, the run's own end when known, else now)."""
        self._stop_updates()
        self._read_metrics()
        reason, failure = ending_for(exc, self.state.header.nodes)
        with self._lock:
            self.state.finish(status, reason=reason, failure=failure, ended_ms=ended_ms)
        self._leave(self._data())

    def detach(self) -> None:
        """Stop updating the card (the run goes on elsewhere): it stays as it was last seen."""
        self._stop_updates()
        self._leave(self._data())

    def snapshot(self) -> dict:
        """What the card shows now, to show it again later (:meth:`show_snapshot`)."""
        return self._data()

    @classmethod
    def show_snapshot(cls, data: dict, mode: str) -> None:
        """Show a card saved with :meth:`snapshot` again, as static HTML and text (printed in text mode)."""
        if mode == "text":
            print(render_text(data))
            return
        from IPython.display import display

        display(cls._static(data), raw=True)

    def _stop_updates(self) -> None:
        self._stopping.set()
        if self._thread is not None:
            self._thread.join(_JOIN_SECONDS)

    def _leave(self, data: dict) -> None:
        """Replace the live card by the static ``data`` (printed in text mode) and close the widget."""
        if self.mode == "text":
            self._print(render_text(data))
            return
        if self._handle is None:
            return  # never shown: showing it failed, and that error is the one the cell reports
        self._handle.update(self._static(data), raw=True)
        # Headless runs (nbclient) save the last state of every widget, closed or not: leave an empty one.
        self._widget.card = {}
        self._widget.close()

    @staticmethod
    def _static(data: dict) -> dict:
        now_ms = int(time.time() * 1000)
        return {"text/html": render_html(data, now_ms), "text/plain": render_text(data, now_ms)}

    def _read_metrics(self) -> None:
        if self._reader is None:
            return
        try:
            metrics = self._reader.read()
        except Exception:  # an unreachable store must not break the cell; the next read retries
            log.debug("reading the metrics of run %s failed", self.state.header.run.id, exc_info=True)
            return
        with self._lock:
            self.state.set_metrics(metrics, self._reader.energy)

    def _keep_up_to_date(self) -> None:
        """The card's one thread: metrics every ``METRICS_SECONDS``, an update at most every ``PUSH_SECONDS``."""
        next_read = time.monotonic() + PUSH_SECONDS  # the first read soon: a run may log at once
        while not self._stopping.wait(PUSH_SECONDS):
            if time.monotonic() >= next_read:
                self._read_metrics()
                next_read = time.monotonic() + METRICS_SECONDS
            if self.state.revision != self._pushed and not self._stopping.is_set():
                self._pushed = self.state.revision
                self._widget.card = self._data()
