"""One kept-alive HTTP connection to an MLflow server (stdlib only): over a Unix socket or to an http(s) tracking
server, with MLflow's credentials, TLS settings, timeout and retries (``MLFLOW_HTTP_REQUEST_*``). Answers are
JSON; errors are raised in MLflow's own words."""

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
from urllib.parse import urlsplit

from jupyter_air.tracking.entities import TrackingError

#: Status codes MLflow's client retries on a tracking server (with exponential backoff).
RETRY_CODES = frozenset({408, 429, 500, 502, 503, 504})


class ServerGone(TrackingError):
    """The server could not be reached at all (nothing was sent): the caller may use another way in."""


def _env_number(name: str, default: float) -> float:
    try:
        return float(os.environ.get(name) or default)
    except ValueError:
        return default


class UnixConnection(http.client.HTTPConnection):
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


class HttpSession:
    """Requests to one server through one kept-alive connection, used in turn (thread-safe)."""

    def __init__(self, origin: str, connect, headers: dict[str, str], *, retries: int = 0, prefix: str = ""):
        self.origin = origin  # for messages: the server's URL, or ``unix:<socket>``
        self.prefix = prefix  # the path the server's API sits under (``http://host/mlflow``: ``/mlflow``)
        self._connect = connect
        self._headers = {"Content-Type": "application/json", "User-Agent": "jupyter-air", **headers}
        self._retries = retries
        self._lock = threading.Lock()
        self._conn: http.client.HTTPConnection | None = None

    @classmethod
    def unix(cls, socket_path: Path) -> HttpSession:
        """The embedded MLflow server listening on ``socket_path``."""
        timeout = _env_number("MLFLOW_HTTP_REQUEST_TIMEOUT", 120)
        return cls(f"unix:{socket_path}", lambda: UnixConnection(str(socket_path), timeout), {})

    @classmethod
    def http(cls, uri: str, token: str | None = None) -> HttpSession:
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
        return cls(uri.rstrip("/"), connect, headers, retries=retries, prefix=parts.path.rstrip("/"))

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def request(self, method: str, path: str, body, length: int | None) -> dict:
        """``method`` on ``path`` (under ``prefix``) with ``body`` (bytes or a file): the JSON answer, retried as
        MLflow's client retries."""
        path = self.prefix + path
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
