"""A small MLflow REST client (stdlib only): runs and experiments over a Unix socket or an http(s) tracking server.

It speaks MLflow's REST API 2.0 (``runs/create``, ``runs/log-batch``, ``runs/update``, ``experiments/get-by-name``,
...) so the notebook kernel and ``air`` never import MLflow to create, log to and end runs. Errors from the server
are raised in MLflow's own words (``RESOURCE_DOES_NOT_EXIST: Run with id=... not found``).
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from urllib.parse import quote, urlencode, urlsplit

from jupyter_air.tracking.entities import Experiment, Metric, Run, TrackingError
from jupyter_air.tracking.http_session import HttpSession
from jupyter_air.tracking.local_artifacts import keep, local_folder

API = "/api/2.0/mlflow/"
ARTIFACTS_API = "/api/2.0/mlflow-artifacts/artifacts/"


class RestTracking:
    """Runs and experiments through MLflow's REST API; thread-safe (one kept-alive connection, used in turn)."""

    def __init__(self, session: HttpSession):
        self._session = session
        self.origin = session.origin  # for messages: the server's URL, or ``unix:<socket>``
        self._artifact_uris: dict[str, str] = {}

    @classmethod
    def unix(cls, socket_path: Path) -> RestTracking:
        """The embedded MLflow server listening on ``socket_path``."""
        return cls(HttpSession.unix(socket_path))

    @classmethod
    def http(cls, uri: str, token: str | None = None) -> RestTracking:
        """A tracking server at ``uri``, with MLflow's auth and TLS variables (see :meth:`HttpSession.http`)."""
        return cls(HttpSession.http(uri, token))

    # -- experiments

    def get_experiment(self, experiment_id: str) -> Experiment:
        return Experiment.of(self.call("GET", "experiments/get", experiment_id=experiment_id)["experiment"])

    def get_experiment_by_name(self, name: str) -> Experiment | None:
        try:
            found = self.call("GET", "experiments/get-by-name", experiment_name=name)
        except TrackingError as err:
            if err.error_code == "RESOURCE_DOES_NOT_EXIST":
                return None
            raise
        return Experiment.of(found["experiment"])

    def create_experiment(self, name: str, artifact_location: str | None = None, tags: dict | None = None) -> str:
        body = {"name": name, "tags": _pairs(tags or {})}
        if artifact_location:
            body["artifact_location"] = artifact_location
        return self.call("POST", "experiments/create", body)["experiment_id"]

    def restore_experiment(self, experiment_id: str) -> None:
        self.call("POST", "experiments/restore", {"experiment_id": experiment_id})

    # -- runs

    def create_run(self, experiment_id: str, *, run_name: str | None, tags: dict[str, str]) -> Run:
        body = {
            "experiment_id": experiment_id,
            "user_id": tags.get("mlflow.user", "unknown"),
            "start_time": int(time.time() * 1000),
            "tags": _pairs(tags),
        }
        if run_name:
            body["run_name"] = run_name
        return Run.of(self.call("POST", "runs/create", body)["run"])

    def get_run(self, run_id: str) -> Run:
        return Run.of(self.call("GET", "runs/get", run_id=run_id)["run"])

    def update_run(self, run_id: str, status: str | None = None, name: str | None = None) -> None:
        body = {"run_id": run_id, **({"status": status} if status else {}), **({"run_name": name} if name else {})}
        if len(body) > 1:
            self.call("POST", "runs/update", body)

    def set_terminated(self, run_id: str, status: str) -> None:
        self.call("POST", "runs/update", {"run_id": run_id, "status": status, "end_time": int(time.time() * 1000)})

    def log_batch(self, run_id: str, metrics=(), params: dict | None = None, tags: dict | None = None) -> None:
        body = {
            "run_id": run_id,
            "metrics": [{"key": m.key, "value": m.value, "timestamp": m.timestamp, "step": m.step} for m in metrics],
            "params": _pairs(params or {}),
            "tags": _pairs(tags or {}),
        }
        self.call("POST", "runs/log-batch", body)

    def set_tag(self, run_id: str, key: str, value: str) -> None:
        self.call("POST", "runs/set-tag", {"run_id": run_id, "key": key, "value": value})

    def get_metric_history(self, run_id: str, key: str) -> list[Metric]:
        metrics, token = [], None
        while True:
            page = self.call(
                "GET", "metrics/get-history", run_id=run_id, metric_key=key, max_results=25000, page_token=token
            )
            metrics += [Metric.of(m) for m in page.get("metrics", [])]
            token = page.get("next_page_token")
            if not token:
                return metrics

    def log_artifact(self, run_id: str, path: Path, artifact_path: str) -> bool:
        """Keep ``path`` as the run's artifact under ``artifact_path``: copied into a local artifact folder, or
        sent to the server's artifact proxy (``mlflow-artifacts:``). False when this client cannot reach the
        run's artifact store (S3 and the like: MLflow's own client can)."""
        uri = self._artifact_uris.get(run_id) or self.get_run(run_id).info.artifact_uri
        self._artifact_uris[run_id] = uri
        folder = local_folder(uri)
        if folder is not None:  # never through a link (see local_artifacts)
            keep(folder, artifact_path, [path])
            return True
        if uri.startswith("mlflow-artifacts:"):
            target = urlsplit(uri).path.strip("/") + f"/{artifact_path.strip('/')}/{path.name}"
            with open(path, "rb") as body:
                self._session.request("PUT", ARTIFACTS_API + quote(target), body, path.stat().st_size)
            return True
        return False

    def close(self) -> None:
        self._session.close()

    # -- transport

    def call(self, method: str, endpoint: str, body: dict | None = None, api: str = API, **query) -> dict:
        """One request to MLflow's REST API (``endpoint`` under ``api``, 2.0's by default): its JSON answer."""
        path = api + endpoint
        query = {k: v for k, v in query.items() if v is not None}
        if query:
            path += "?" + urlencode(query)
        data = None if body is None else json.dumps(body).encode()
        return self._session.request(method, path, data, None if data is None else len(data))


def _pairs(mapping: dict) -> list[dict[str, str]]:
    return [{"key": str(k), "value": str(v)} for k, v in mapping.items()]
