"""A managed MLflow run around a call: status view, system metrics, final status owned by the caller."""

from __future__ import annotations

import contextlib
import logging

from jupyter_air.training import runs
from jupyter_air.notebook_links import RunStatusView

#: Seconds between system-metric samples (MLflow's default interval).
SYSTEM_METRICS_INTERVAL_SECONDS = 10.0
_LAUNCHER_LOGGERS = ("torch.distributed.elastic", "torch.distributed.launcher", "torch.multiprocessing", "torchelastic")


def root_cause(exc: BaseException) -> str:
    message = exc.args[0] if exc.args and isinstance(exc.args[0], str) else str(exc)
    return f"{type(exc).__name__}: {message}"


class TrackedRun:
    """One call's MLflow run: created first, announced (link, params, metrics) while work starts, then ended."""

    def __init__(self, *, experiment: str | None, run_name: str | None, tags: dict[str, str]):
        self.info = runs.create_run(experiment=experiment, run_name=run_name, tags=tags)
        self.view: RunStatusView | None = None
        self._metrics = None

    def announce(self, params: dict[str, str], log_system_metrics: bool) -> None:
        """Show the run's links and status, record its parameters and start sampling system metrics."""
        from jupyter_air.tracking.system_metrics import SystemMetrics

        runs.describe(self.info)
        self.view = RunStatusView(self.info)
        self.view.show()
        runs.log_params(self.info, params)
        if log_system_metrics:
            self._metrics = SystemMetrics(self.info.run_id, SYSTEM_METRICS_INTERVAL_SECONDS)
            self._metrics.start()

    def tick(self) -> None:
        if self.view is not None:
            self.view.tick()

    def finish(self, status: str, error: str | None = None) -> None:
        """Take the last system-metrics sample, then set the final status (the launcher's word is final)."""
        if self._metrics is not None:
            self._metrics.stop()
        runs.end_run(self.info, status, error)
        if self.view is not None:
            self.view.finish(status)

    def finish_for(self, exc: BaseException | None) -> None:
        """End FINISHED, KILLED for an interrupt, or FAILED with the exception as root cause."""
        if exc is None:
            self.finish("FINISHED")
        elif isinstance(exc, KeyboardInterrupt):
            self.finish("KILLED", "interrupted")
        else:
            self.finish("FAILED", root_cause(exc))


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
