"""A notebook call's run: created first, announced (link, params, metrics) while work starts, ended by the caller."""

from __future__ import annotations

import contextlib
import logging

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
def quiet_launcher_logs():
    """Keep the elastic launcher's own log records out of the cell; failures are reported by us.

    torch gives each of its loggers an explicit level, so each one is silenced, not just the parents.
    """
    import torch.distributed.launcher.api  # noqa: F401 - creates the launcher's loggers before we silence them

    loggers = [
        logging.getLogger(name)
        for name in list(logging.root.manager.loggerDict)
        if name.startswith(_LAUNCHER_LOGGERS)
    ]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        for logger, level in zip(loggers, levels):
            logger.setLevel(level)
