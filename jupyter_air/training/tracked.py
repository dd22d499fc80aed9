"""A notebook call's run: created first, announced (link, params, metrics) while work starts, ended by the caller."""

from __future__ import annotations

import contextlib
import logging
import os

from jupyter_air.notebook_links import RunStatusView
from jupyter_air.training import runs

_LAUNCHER_LOGGERS = ("torch.distributed.elastic", "torch.distributed.launcher", "torch.multiprocessing", "torchelastic")


class TrackedRun:
    """One call's MLflow run (a :class:`~jupyter_air.tracking.lifecycle.ManagedRun`) and its view in the cell."""

    def __init__(self, *, experiment: str | None, run_name: str | None, tags: dict[str, str]):
        self.run = runs.create_run(experiment=experiment, run_name=run_name, tags=tags)
        self.view: RunStatusView | None = None

    def announce(self, params: dict[str, str], log_system_metrics: bool) -> None:
        """Show the run's links and status, record its parameters and start sampling system metrics."""
        with self.run.guard():
            self.run.describe()
            self.view = RunStatusView(self.run)
            self.view.show()
            self.run.log_params(params)
            if log_system_metrics:
                self.run.start_system_metrics()

    def tick(self) -> None:
        if self.view is not None:
            self.view.tick()

    def finish_for(self, exc: BaseException | None) -> None:
        """End FINISHED, KILLED for an interrupt, or FAILED with the exception as root cause; update the view."""
        try:
            self.run.end_for(exc)
        finally:
            if self.view is not None:
                self.view.finish(self.run.status or "FAILED")


@contextlib.contextmanager
def tracked_run(*, experiment, run_name, tags, params, log_system_metrics):
    """Yield the :class:`TrackedRun` of a block of work; it ends FINISHED, FAILED or KILLED with the block."""
    run = TrackedRun(experiment=experiment, run_name=run_name, tags=tags)
    try:
        run.announce(params, log_system_metrics)
        yield run
    except BaseException as exc:
        run.finish_for(exc)
        raise
    run.finish_for(None)


@contextlib.contextmanager
def active_in_kernel(run_id: str):
    """Make the run the kernel's active MLflow run for the block, so ``mlflow.log_*`` in a cell goes to it.

    MLflow reads (and removes) ``MLFLOW_RUN_ID`` and reads ``MLFLOW_TRACKING_URI`` from the environment:
    both are set for the block and put back as they were after it.
    """
    import mlflow

    from jupyter_air.tracking.store import tracking_uri

    saved = {k: os.environ.get(k) for k in ("MLFLOW_TRACKING_URI", "MLFLOW_RUN_ID")}
    os.environ["MLFLOW_TRACKING_URI"] = tracking_uri()
    try:
        mlflow.start_run(run_id=run_id, nested=mlflow.active_run() is not None)
        try:
            yield
        finally:
            mlflow.end_run()
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


@contextlib.contextmanager
def quiet_launcher_logs():
    """Keep the elastic launcher's own log records out of the cell; failures are reported by us.

    torch gives each of its loggers an explicit level, so each one is silenced, not just the parents.
    """
    import torch.distributed.launcher.api  # noqa: F401 - creates the launcher's loggers before we silence them

    loggers = [
        logging.getLogger(name) for name in list(logging.root.manager.loggerDict) if name.startswith(_LAUNCHER_LOGGERS)
    ]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        for logger, level in zip(loggers, levels, strict=True):
            logger.setLevel(level)
