"""The one MLflow run lifecycle of notebook calls and workload attempts: create, track, keep logs, end.

A :class:`ManagedRun` is owned by the code that created it: whatever happens after creation, it ends
with a final status (FINISHED, FAILED with the root cause in the tag ``air.error``, or KILLED) and is
never left RUNNING. Keys and values are checked or clipped to MLflow's limits before anything is created.
"""

from __future__ import annotations

import contextlib
import logging
import os
import posixpath
import re
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path

from jupyter_air.tracking.energy import sum_nodes
from jupyter_air.tracking.inprocess import InProcessTracking
from jupyter_air.tracking.links import links
from jupyter_air.tracking.local_artifacts import keep, local_folder
from jupyter_air.tracking.naming import ERROR_TAG
from jupyter_air.tracking.store import client, tracker
from jupyter_air.tracking.store import tracking_uri as default_uri
from jupyter_air.tracking.system_metrics import SystemMetrics

#: MLflow's limits (``mlflow.utils.validation``): key length, param and tag value length.
MAX_KEY_CHARS = 250
MAX_PARAM_VALUE_CHARS = 6000
MAX_TAG_VALUE_CHARS = 8000
#: Characters MLflow accepts in param, tag and metric keys (on POSIX).
_KEY_CHARS = re.compile(r"[/\w.\- :]*")
#: Seconds between two system-metrics samples of a notebook call, a ``%%air_run`` cell or a job attempt (default 10).
SYSTEM_METRICS_INTERVAL_ENV = "AIR_SYSTEM_METRICS_INTERVAL_SECONDS"
DEFAULT_SYSTEM_METRICS_INTERVAL_SECONDS = 10.0
#: Final statuses, and the tag that holds the root cause of a FAILED or KILLED run.
FINISHED, FAILED, KILLED = "FINISHED", "FAILED", "KILLED"

log = logging.getLogger(__name__)


class RunStopped(Exception):
    """The run was stopped on request (a Stop button, a cancel); it ends KILLED."""


def key_problem(key: object) -> str | None:
    """Why MLflow would refuse ``key`` as a param, tag or metric name, or None when it is fine."""
    if not isinstance(key, str) or not key:
        return "must be a non-empty string"
    if len(key) > MAX_KEY_CHARS:
        return f"is {len(key)} characters long; MLflow allows at most {MAX_KEY_CHARS}"
    if not _KEY_CHARS.fullmatch(key):
        return (
            "may only contain letters, digits, underscores (_), dashes (-), periods (.), spaces, colons (:) "
            "and slashes (/)"
        )
    if posixpath.normpath(key) != key or key.startswith(("/", "..")) or key == ".":
        return (
            f"would be read as the path {posixpath.normpath(key)!r}; write it as that, without './', '..' "
            "or a leading '/'"
        )
    return None


def clip(value: object, limit: int) -> str:
    """``value`` as text of at most ``limit`` characters (an ellipsis marks a cut)."""
    text = value if isinstance(value, str) else repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def system_metrics_interval() -> float:
    """Seconds between system-metrics samples: ``$AIR_SYSTEM_METRICS_INTERVAL_SECONDS`` or 10."""
    raw = os.environ.get(SYSTEM_METRICS_INTERVAL_ENV, "").strip()
    if not raw:
        return DEFAULT_SYSTEM_METRICS_INTERVAL_SECONDS
    try:
        value = float(raw)
    except ValueError:
        value = 0.0
    if not value > 0:
        raise ValueError(f"{SYSTEM_METRICS_INTERVAL_ENV}={raw!r}: expected a positive number of seconds, e.g. 10")
    return value


def root_cause(exc: BaseException) -> str:
    """``Type: message`` of the exception that ended a run."""
    message = exc.args[0] if exc.args and isinstance(exc.args[0], str) else str(exc)
    return f"{type(exc).__name__}: {message}"


def status_for(exc: BaseException | None) -> tuple[str, str | None]:
    """The final status and root cause for a block of work that ended with ``exc`` (None: success)."""
    if exc is None:
        return FINISHED, None
    if isinstance(exc, KeyboardInterrupt):
        return KILLED, "interrupted"
    if isinstance(exc, RunStopped):
        return KILLED, str(exc) or "stopped"
    return FAILED, root_cause(exc)


class ManagedRun:
    """An MLflow run from creation to its final status; use it as a context manager to guarantee the end.

    ``client`` is how the store is reached (:func:`~jupyter_air.tracking.store.tracker`): MLflow's REST API, or
    MLflow's client in this process where no server can be asked.
    """

    def __init__(self, client, run_id: str, experiment_id: str, run_name: str, tracking_uri: str | None = None):
        self.client = client
        self.tracking_uri = tracking_uri or default_uri()
        self.run_id = run_id
        self.experiment_id = experiment_id
        self.run_name = run_name
        self.experiment_name = ""
        self.url: str | None = None
        self.experiment_url: str | None = None
        self.status: str | None = None
        self._metrics = None

    @classmethod
    def create(
        cls,
        experiment_id: str,
        *,
        run_name: str | None,
        tags: Mapping[str, object],
        params: Mapping[str, object] = (),
        tracking=None,
    ) -> ManagedRun:
        """Create a run with its tags and params; a run whose params cannot be logged is ended FAILED.
        ``tracking``: how the store is reached (default :func:`~jupyter_air.tracking.store.tracker`)."""
        tracking = tracking or tracker()
        run = tracking.create_run(experiment_id, run_name=run_name, tags=_tags(tags))
        managed = cls(tracking, run.info.run_id, run.info.experiment_id, run.info.run_name)
        with managed.guard():
            managed._log_params(params, existing=set())  # a new run has none yet
        return managed

    @classmethod
    def resume(cls, run_id: str, *, run_name: str | None, tags: Mapping[str, object], tracking=None) -> ManagedRun:
        """Take over an existing run (``MLFLOW_RUN_ID``): RUNNING again, renamed if asked, tags added."""
        tracking = tracking or tracker()
        run = tracking.get_run(run_id)
        tracking.update_run(run_id, status="RUNNING", name=run_name)
        tracking.log_batch(run_id, tags=_tags(tags))
        return cls(tracking, run_id, run.info.experiment_id, run_name or run.info.run_name)

    @classmethod
    def adopt(cls, run_id: str, tracking_uri: str | None = None) -> ManagedRun:
        """The run ``run_id`` (in ``tracking_uri``, default this process's store), to end it for a process
        that can no longer (a supervisor found dead)."""
        tracking = tracker(tracking_uri)
        run = tracking.get_run(run_id)
        return cls(tracking, run_id, run.info.experiment_id, run.info.run_name, tracking_uri)

    def log_params(self, params: Mapping[str, object]) -> None:
        """Record params (clipped to MLflow's limit); keys the run already has keep their value."""
        self._log_params(params)

    def _log_params(self, params: Mapping[str, object], existing: set[str] | None = None) -> None:
        params = dict(params)
        if not params:
            return
        if existing is None:
            existing = set(self.client.get_run(self.run_id).data.params)
        fresh = [(str(k), clip(v, MAX_PARAM_VALUE_CHARS)) for k, v in params.items() if str(k) not in existing]
        for start in range(0, len(fresh), 100):  # MLflow takes at most 100 params per batch
            self.client.log_batch(self.run_id, params=dict(fresh[start : start + 100]))

    def start_system_metrics(self, node_id: str | None = None, gpu_source=None, gpus: list[str] | None = None) -> None:
        """Sample CPU, memory, disk, network and GPU into the run until it ends (a final sample included), with the
        energy of ``gpus`` (named as ``CUDA_VISIBLE_DEVICES`` names them; default: the visible ones)."""
        self._metrics = SystemMetrics(
            self.run_id,
            system_metrics_interval(),
            node_id=node_id,
            gpu_source=gpu_source,
            tracking=self.client,
            gpus=gpus,
        )
        self._metrics.start()

    def upload(self, paths: Iterable[Path], artifact_path: str, owner: dict | None = None) -> None:
        """Keep files (log files) as the run's artifacts under ``artifact_path``. Into a local artifact folder they
        are written without following links (:mod:`~jupyter_air.tracking.local_artifacts`), by a process started
        with the ``subprocess.Popen`` arguments ``owner`` (the account they belong to; None: this process)."""
        files = [path for path in paths if path.is_file()]
        folder = local_folder(self.client.get_run(self.run_id).info.artifact_uri) if files else None
        if folder is not None:
            keep(folder, artifact_path, files, owner)
            return
        for path in files:
            if not self.client.log_artifact(self.run_id, path, artifact_path):
                # an artifact store only MLflow's client reaches (S3 and the like)

                InProcessTracking(self.tracking_uri, client).log_artifact(self.run_id, path, artifact_path)

    def end(self, status: str, error: str | None = None) -> None:
        """Take the last system-metrics sample, then set the final status (once set, later calls do nothing; a
        call the store refused, e.g. on a full disk, can be made again)."""
        if self.status is not None:
            return
        try:
            if self._metrics is not None:
                self._metrics.stop()
            else:
                self._sum_node_energy()
        finally:
            if error:
                self.client.set_tag(self.run_id, ERROR_TAG, clip(error, MAX_TAG_VALUE_CHARS))
            self.client.set_terminated(self.run_id, status=status)
        self.status = status

    def _sum_node_energy(self) -> None:
        """A run whose nodes sampled themselves (multi-node): their GPUs' energy summed into the run's total."""
        try:
            sum_nodes(self.client, self.run_id)
        except Exception as exc:  # noqa: BLE001 - the total is a convenience: the run must end whatever happens
            log.warning("Energy of run %s not summed over its nodes: %s", self.run_id, exc)

    def end_for(self, exc: BaseException | None) -> None:
        """End FINISHED, KILLED for an interrupt or a stop, or FAILED with the exception as root cause."""
        self.end(*status_for(exc))

    @contextlib.contextmanager
    def guard(self) -> Iterator[ManagedRun]:
        """A block after which the run is ended FAILED/KILLED if the block raised (left running otherwise)."""
        try:
            yield self
        except BaseException as exc:
            self.end_for(exc)
            raise

    def describe(self) -> None:
        """Fill in ``experiment_name``, and ``url`` and ``experiment_url``, the links that open the run and its
        experiment (None when no UI serving this store is known)."""
        self.experiment_name = self.client.get_experiment(self.experiment_id).name
        found = links(self.experiment_id, self.run_id)
        self.url, self.experiment_url = found.run, found.experiment

    def __enter__(self) -> ManagedRun:
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        self.end_for(exc)


def _tags(tags: Mapping[str, object]) -> dict[str, str]:
    return {str(k): clip(v, MAX_TAG_VALUE_CHARS) for k, v in tags.items()}
