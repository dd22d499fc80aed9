"""The same calls as :class:`~jupyter_air.tracking.rest.RestTracking`, through MLflow's client in this process.

Used where no MLflow server can be asked: a store that only MLflow's client reaches (``databricks``, a plugin's
scheme), or while the embedded server of ``AIR_HOME`` is still starting. Imports MLflow (2-3 s).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from jupyter_air.tracking.entities import Experiment, Metric, Run, RunData, RunInfo, TrackingError


@contextlib.contextmanager
def _in_mlflow_words() -> Iterator[None]:
    from mlflow.exceptions import MlflowException

    try:
        yield
    except MlflowException as err:
        raise TrackingError(err.message, err.error_code) from err


def _run(run) -> Run:
    info = run.info
    metrics = [Metric(m.key, m.value, m.timestamp, m.step) for m in run.to_proto().data.metrics]
    return Run(
        RunInfo(
            info.run_id,
            info.experiment_id,
            info.run_name or "",
            info.status,
            info.artifact_uri or "",
            info.start_time,
            info.end_time,
        ),
        RunData(metrics, dict(run.data.params), dict(run.data.tags)),
    )


def _experiment(experiment) -> Experiment:
    return Experiment(
        experiment.experiment_id, experiment.name, experiment.artifact_location or "", experiment.lifecycle_stage
    )


class InProcessTracking:
    """Runs and experiments through the ``MlflowClient`` that ``client(uri)`` makes
    (:func:`jupyter_air.tracking.store.client`: its store prepared once per process)."""

    def __init__(self, uri: str, client: Callable[[str], Any]):
        self.origin = uri
        with _in_mlflow_words():
            self._client = client(uri)

    def get_experiment(self, experiment_id: str) -> Experiment:
        with _in_mlflow_words():
            return _experiment(self._client.get_experiment(experiment_id))

    def get_experiment_by_name(self, name: str) -> Experiment | None:
        with _in_mlflow_words():
            found = self._client.get_experiment_by_name(name)
        return None if found is None else _experiment(found)

    def create_experiment(self, name: str, artifact_location: str | None = None, tags: dict | None = None) -> str:
        with _in_mlflow_words():
            return self._client.create_experiment(name, artifact_location=artifact_location, tags=tags)

    def restore_experiment(self, experiment_id: str) -> None:
        with _in_mlflow_words():
            self._client.restore_experiment(experiment_id)

    def create_run(self, experiment_id: str, *, run_name: str | None, tags: dict[str, str]) -> Run:
        with _in_mlflow_words():
            return _run(self._client.create_run(experiment_id, run_name=run_name, tags=tags))

    def get_run(self, run_id: str) -> Run:
        with _in_mlflow_words():
            return _run(self._client.get_run(run_id))

    def update_run(self, run_id: str, status: str | None = None, name: str | None = None) -> None:
        with _in_mlflow_words():
            self._client.update_run(run_id, status=status, name=name)

    def set_terminated(self, run_id: str, status: str) -> None:
        with _in_mlflow_words():
            self._client.set_terminated(run_id, status=status)

    def log_batch(self, run_id: str, metrics=(), params: dict | None = None, tags: dict | None = None) -> None:
        from mlflow.entities import Metric as MlflowMetric
        from mlflow.entities import Param, RunTag

        with _in_mlflow_words():
            self._client.log_batch(
                run_id,
                metrics=[MlflowMetric(m.key, m.value, m.timestamp, m.step) for m in metrics],
                params=[Param(k, str(v)) for k, v in (params or {}).items()],
                tags=[RunTag(k, str(v)) for k, v in (tags or {}).items()],
            )

    def set_tag(self, run_id: str, key: str, value: str) -> None:
        with _in_mlflow_words():
            self._client.set_tag(run_id, key, value)

    def get_metric_history(self, run_id: str, key: str) -> list[Metric]:
        with _in_mlflow_words():
            return [Metric(m.key, m.value, m.timestamp, m.step) for m in self._client.get_metric_history(run_id, key)]

    def log_artifact(self, run_id: str, path: Path, artifact_path: str) -> bool:
        with _in_mlflow_words():
            self._client.log_artifact(run_id, str(path), artifact_path=artifact_path)
        return True

    def close(self) -> None:
        pass
