"""A notebook call's run: created first, announced (link, params, metrics) while work starts, ended by the caller."""

from __future__ import annotations

import contextlib
import importlib.abc
import importlib.util
import os
import signal
import sys
import threading

from jupyter_air.run_card.card import RunCard, card_mode, header_for
from jupyter_air.run_card.metrics import MetricReader
from jupyter_air.run_card.starting import StartingCard
from jupyter_air.run_card.state import CardState
from jupyter_air.tracking.stops import LiveRun
from jupyter_air.tracking.store import tracking_uri
from jupyter_air.training import runs
from jupyter_air.training.errors import CallStopped

#: Why a run stopped from its card (or the Stop route) ended KILLED; also the message of the CallStopped raised.
STOPPED = "stopped with the Stop button; every process of the call was stopped"
#: Seconds between two looks for a Stop request while a cell runs in the kernel's main thread.
_STOP_POLL_SECONDS = 0.2


class TrackedRun:
    """One call's MLflow run (a :class:`~jupyter_air.tracking.lifecycle.ManagedRun`) and its card in the cell.

    ``kind`` is ``distributed`` (ranks in worker processes, ``world_size`` of them on ``nodes`` nodes with
    ``gpus`` GPUs each) or ``kernel`` (the cell runs in the kernel itself).
    """

    def __init__(
        self,
        *,
        experiment: str | None,
        run_name: str | None,
        tags: dict[str, str],
        kind: str = "distributed",
        world_size: int = 1,
        gpus: int = 0,
        nodes: int = 1,
        starting: StartingCard | None = None,
    ):
        self.starting = starting
        self.run = runs.create_run(experiment=experiment, run_name=run_name, tags=tags)
        with self.run.guard():  # registered at once: if this process dies, the server's check ends the run
            self.live: LiveRun = LiveRun(self.run.run_id)
        self.card: RunCard | None = None
        self._placement = {"kind": kind, "world_size": world_size, "gpus": gpus, "nodes": nodes}

    def announce(self, params: dict[str, str], log_system_metrics: bool, stoppable: bool = True) -> None:
        """Show the run's card, let Stop requests reach it, record its parameters and start system metrics."""
        with self.run.guard():
            self.run.describe()
            state = CardState(header_for(self.run, **self._placement))
            self.card = RunCard(state, MetricReader(self.run.client, self.run.run_id), card_mode(), stoppable)
            self.card.show(self.starting.handle if self.starting is not None else None)
            self.run.log_params(params)
            if log_system_metrics:  # the energy of the call's GPUs; a cell in the kernel may use every visible one
                kernel = self._placement["kind"] == "kernel"
                self.run.start_system_metrics(gpus=None if kernel else list(state.header.gpus))

    def show_lines(self, lines: list[tuple[int, str]]) -> None:
        """The ranks' new ``(rank, line)`` output, for the card."""
        if self.card is not None:
            self.card.add_lines(lines)

    def stop_requested(self) -> bool:
        """True once the Stop button (the ``runs/<id>/stop`` route) asked for this run to stop."""
        return self.live.requested()

    def finish_for(self, exc: BaseException | None) -> None:
        """End FINISHED, KILLED for an interrupt or a stop, or FAILED with the exception as root cause; show it."""
        try:
            self.run.end_for(exc)
        finally:
            self.live.close()
            if self.card is not None:
                self.card.finish(self.run.status or "FAILED", exc)


@contextlib.contextmanager
def tracked_run(*, experiment, run_name, tags, params, log_system_metrics):
    """Yield the :class:`TrackedRun` of a block of work run here; it ends FINISHED, FAILED or KILLED with the block.

    In the main thread, the card's Stop interrupts the block as the kernel's interrupt does (SIGINT), and the
    block raises :class:`~jupyter_air.training.errors.CallStopped`.
    """
    starting = StartingCard(card_mode(), "creating its MLflow run")
    try:
        run = TrackedRun(experiment=experiment, run_name=run_name, tags=tags, kind="kernel", starting=starting)
    except BaseException as exc:
        starting.failed(exc)
        raise
    in_main = threading.current_thread() is threading.main_thread()
    try:
        run.announce(params, log_system_metrics, stoppable=in_main)
        with _interrupted_on_stop(run) if in_main else contextlib.nullcontext():
            yield run
    except BaseException as exc:
        if isinstance(exc, KeyboardInterrupt) and run.stop_requested():
            stopped = CallStopped(STOPPED)
            run.finish_for(stopped)
            raise stopped from exc
        run.finish_for(exc)
        raise
    run.finish_for(None)


@contextlib.contextmanager
def _interrupted_on_stop(run: TrackedRun):
    """While the block runs, a Stop request sends SIGINT to the main thread (interrupting a sleep or a read)."""
    done = threading.Event()
    sending = threading.Lock()

    def watch() -> None:
        while not done.wait(_STOP_POLL_SECONDS):
            with sending:
                if not done.is_set() and run.stop_requested():
                    signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)
                    return

    watcher = threading.Thread(target=watch, name="air-stop-watcher", daemon=True)
    watcher.start()
    try:
        yield
    finally:
        with sending:
            done.set()
        watcher.join(timeout=5 * _STOP_POLL_SECONDS)


@contextlib.contextmanager
def active_in_kernel(run_id: str):
    """Make the run the kernel's active MLflow run for the block, so ``mlflow.log_*`` in a cell goes to it.

    A kernel that has not imported MLflow does not import it for this: the run becomes active when the cell
    imports MLflow. MLflow reads ``MLFLOW_TRACKING_URI`` from the environment: it is set for the block and put
    back as it was after it.
    """

    saved = {k: os.environ.get(k) for k in ("MLFLOW_TRACKING_URI", "MLFLOW_RUN_ID")}
    os.environ["MLFLOW_TRACKING_URI"] = tracking_uri()
    hook = None
    try:
        if "mlflow" in sys.modules:
            mlflow = sys.modules["mlflow"]
            mlflow.start_run(run_id=run_id, nested=mlflow.active_run() is not None)
        else:
            hook = _StartOnImport(run_id)
            sys.meta_path.insert(0, hook)
        try:
            yield
        finally:
            if hook in sys.meta_path:
                sys.meta_path.remove(hook)
            mlflow = sys.modules.get("mlflow")
            active = mlflow.active_run() if mlflow is not None and hasattr(mlflow, "active_run") else None
            if active is not None and active.info.run_id == run_id:
                mlflow.end_run()
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


class _StartOnImport(importlib.abc.MetaPathFinder):
    """Starts ``run_id`` as MLflow's active run as soon as MLflow is imported (once)."""

    def __init__(self, run_id: str):
        self.run_id = run_id
        self.done = False

    def find_spec(self, name, path=None, target=None):
        if name != "mlflow" or self.done:
            return None
        self.done = True  # also keeps the look-up below from coming back here
        spec = importlib.util.find_spec(name)
        if spec is None or spec.loader is None:
            return spec
        execute, run_id = spec.loader.exec_module, self.run_id

        def exec_module(module):
            execute(module)
            module.start_run(run_id=run_id)

        spec.loader.exec_module = exec_module  # this spec's own loader
        return spec
