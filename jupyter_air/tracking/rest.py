"""A small MLflow REST client (stdlib only): runs and experiments over a Unix socket or an http(s) tracking server.

It speaks MLflow's REST API 2.0 (``runs/create``, ``runs/log-batch``, ``runs/update``, ``experiments/get-by-name``,
...) so the notebook kernel and ``air`` never import MLflow to create, log to and end runs. Errors from the server
are raised in MLflow's own words (``RESOURCE_DOES_NOT_EXIST: Run with id=... not found``).
"""

from __future__ import annotations

import base64
import http.client
import json
import os
import random
import socket
import ssl
import threading
import time
from pathlib import Path
from urllib.parse import quote, urlencode, urlsplit

from jupyter_air.tracking.entities import Experiment, Metric, Run, TrackingError
from jupyter_air.tracking.local_artifacts import keep, local_folder

API = "/api/2.0/mlflow/"
ARTIFACTS_API = "/api/2.0/mlflow-artifacts/artifacts/"
#: Status codes MLflow's client retries on a tracking server (with exponential backoff).
RETRY_CODES = frozenset({408, 429, 500, 502, 503, 504})


class ServerGone(TrackingError):
    """The server could not be reached at all (nothing was sent): the caller may use another way in."""


def _env_number(name: str, default: float) -> float:
    try:
        return float(os.environ.get(name) or default)
    except ValueError:
        return default


class _UnixConnection(http.client.HTTPConnection):
    """HTTP over a Unix domain socket."""

    def __init__(self, path: str, timeout: float):
        super().__init__("localhost", timeout=timeout)
        self._socket_path = path

    def connect(self) -> None:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(self.timeout)
        try:
            sock.connect(self._socket_path)
        except OSError:
            sock.close()
            raise
        self.sock = sock


class RestTracking:
    """Runs and experiments through MLflow's REST API; thread-safe (one kept-alive connection, used in turn)."""

    def __init__(self, origin: str, connect, headers: dict[str, str], *, retries: int = 0):
        self.origin = origin  # for messages: the server's URL, or ``unix:<socket>``
        self._connect = connect
        self._headers = {"Content-Type": "application/json", "User-Agent": "jupyter-air", **headers}
        self._retries = retries
        self._lock = threading.Lock()
        self._conn: http.client.HTTPConnection | None = None
        self._artifact_uris: dict[str, str] = {}

    @classmethod
    def unix(cls, socket_path: Path) -> RestTracking:
        """The embedded MLflow server listening on ``socket_path``."""
        timeout = _env_number("MLFLOW_HTTP_REQUEST_TIMEOUT", 120)
        return cls(f"unix:{socket_path}", lambda: _UnixConnection(str(socket_path), timeout), {})

    @classmethod
    def http(cls, uri: str, token: str | None = None) -> RestTracking:
        """A tracking server at ``uri`` (``http(s)://host[:port][/prefix]``), with MLflow's auth variables:
        ``MLFLOW_TRACKING_TOKEN`` (bearer), ``MLFLOW_TRACKING_USERNAME``/``PASSWORD`` (basic),
        ``MLFLOW_TRACKING_INSECURE_TLS``, ``MLFLOW_TRACKING_SERVER_CERT_PATH``, ``MLFLOW_TRACKING_CLIENT_CERT_PATH``;
        ``token``: this bearer token instead of the variables' credentials."""
        parts = urlsplit(uri)
        timeout = _env_number("MLFLOW_HTTP_REQUEST_TIMEOUT", 120)
        headers = {}
        user, password = os.environ.get("MLFLOW_TRACKING_USERNAME"), os.environ.get("MLFLOW_TRACKING_PASSWORD")
        if token is not None:
            headers["Authorization"] = f"Bearer {token}"
        elif user and password:
            headers["Authorization"] = "Basic " + base64.standard_b64encode(f"{user}:{password}".encode()).decode()
        elif os.environ.get("MLFLOW_TRACKING_TOKEN"):
            headers["Authorization"] = f"Bearer {os.environ['MLFLOW_TRACKING_TOKEN']}"
        if parts.scheme == "https":
            context = _tls_context()

            def connect():
                return http.client.HTTPSConnection(parts.hostname, parts.port, timeout=timeout, context=context)
        else:

            def connect():
                return http.client.HTTPConnection(parts.hostname, parts.port, timeout=timeout)

        retries = int(_env_number("MLFLOW_HTTP_REQUEST_MAX_RETRIES", 7))
        tracking = cls(uri.rstrip("/"), connect, headers, retries=retries)
        tracking._prefix = parts.path.rstrip("/")
        return tracking

    _prefix = ""

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
                self._request("PUT", self._prefix + ARTIFACTS_API + quote(target), body, path.stat().st_size)
            return True
        return False

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    # -- transport

    def call(self, method: str, endpoint: str, body: dict | None = None, api: str = API, **query) -> dict:
        """One request to MLflow's REST API (``endpoint`` under ``api``, 2.0's by default): its JSON answer."""
        path = self._prefix + api + endpoint
        query = {k: v for k, v in query.items() if v is not None}
        if query:
            path += "?" + urlencode(query)
        data = None if body is None else json.dumps(body).encode()
        return self._request(method, path, data, None if data is None else len(data))

    def _request(self, method: str, path: str, body, length: int | None) -> dict:
        delay = _env_number("MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR", 2)
        for attempt in range(self._retries + 1):
            try:
                status, data = self._send(method, path, body, length)
            except ServerGone:
                if attempt == self._retries:
                    raise
                status, data = None, b""
            if status is not None and status not in RETRY_CODES or attempt == self._retries:
                return _answer(self.origin, path, status, data)
            if hasattr(body, "seek"):
                body.seek(0)
            time.sleep(min(120.0, delay * 2**attempt) + random.uniform(0, 1))
        raise AssertionError("unreachable")

    def _send(self, method: str, path: str, body, length: int | None) -> tuple[int, bytes]:
        headers = dict(self._headers)
        if length is not None:
            headers["Content-Length"] = str(length)
        with self._lock:
            for fresh in (self._conn is None, True):
                if self._conn is None:
                    self._conn = self._connect()
                    try:
                        self._conn.connect()
                    except OSError as err:
                        self._conn = None
                        raise ServerGone(f"API request to {self.origin}{path} failed with exception {err}") from err
                try:
                    self._conn.request(method, path, body, headers)
                    response = self._conn.getresponse()
                    return response.status, response.read()
                except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError) as err:
                    self._conn.close()
                    self._conn = None
                    if fresh:  # a new connection failed: not a kept-alive one the server had closed
                        raise TrackingError(f"API request to {self.origin}{path} failed with exception {err}") from err
                    if hasattr(body, "seek"):
                        body.seek(0)
                except (OSError, http.client.HTTPException) as err:
                    self._conn.close()
                    self._conn = None
                    raise TrackingError(f"API request to {self.origin}{path} failed with exception {err}") from err
        raise AssertionError("unreachable")


def _answer(origin: str, path: str, status: int | None, data: bytes) -> dict:
    """The JSON answer of a successful request, or the server's error as MLflow's client raises it."""
    text = data.decode("utf-8", "replace")
    try:
        parsed = json.loads(text) if text.strip() else {}
    except ValueError:
        parsed = None
    if status == 200 and isinstance(parsed, dict):
        return parsed
    if isinstance(parsed, dict) and status != 200:
        code = str(parsed.get("error_code") or "INTERNAL_ERROR")
        raise TrackingError(f"{code}: {parsed.get('message', f'Response: {parsed}')}", code)
    raise TrackingError(
        f"API request to endpoint {path} failed with error code {status} != 200. Response body: '{text}'"
    )


def _pairs(mapping: dict) -> list[dict[str, str]]:
    return [{"key": str(k), "value": str(v)} for k, v in mapping.items()]


def _tls_context() -> ssl.SSLContext:
    """TLS settings from MLflow's variables: insecure, a server CA bundle, a client certificate."""
    if os.environ.get("MLFLOW_TRACKING_INSECURE_TLS", "").lower() in ("true", "1"):
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    else:
        context = ssl.create_default_context(cafile=os.environ.get("MLFLOW_TRACKING_SERVER_CERT_PATH") or None)
    client_cert = os.environ.get("MLFLOW_TRACKING_CLIENT_CERT_PATH")
    if client_cert:
        context.load_cert_chain(client_cert)
    return context
