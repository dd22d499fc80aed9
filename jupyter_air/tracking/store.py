"""Where runs are recorded: the MLflow tracking URI, the store made ready once, experiments."""

from __future__ import annotations

import contextlib
import logging
import os
import pathlib
import sqlite3
import time
from collections.abc import Iterator, Mapping, MutableMapping
from urllib.parse import unquote

from jupyter_air.home import AirHomeError, air_home, file_lock, private_dir, private_file, unusable_database
from jupyter_air.tracking import resident
from jupyter_air.tracking.entities import TrackingError
from jupyter_air.tracking.http_session import ServerGone
from jupyter_air.tracking.inprocess import InProcessTracking
from jupyter_air.tracking.rest import RestTracking

#: URL path, under the Jupyter server's base URL, where the MLflow UI is served for the embedded store.
PROXY_PATH = "mlflow/"
#: Experiment tag MLflow 3's UI reads to show an experiment as model training rather than GenAI.
EXPERIMENT_KIND_TAG, MODEL_TRAINING = "mlflow.experimentKind", "custom_model_development"
#: Seconds a read of the store waits while other processes write to it (MLflow's own store waits 20 s).
BUSY_SECONDS = 30.0

# MLflow announces at INFO level that it creates or upgrades the SQLite store's tables; in a notebook that
# shows as an alarming stderr block on the first run. Its warnings and errors still show.
logging.getLogger("mlflow.store.db.utils").setLevel(logging.WARNING)
log = logging.getLogger(__name__)


def tracking_uri(environ: Mapping[str, str] | None = None) -> str:
    """``$MLFLOW_TRACKING_URI`` when set, else the embedded SQLite store ``sqlite:///<AIR_HOME>/mlflow.db``."""
    env = os.environ if environ is None else environ
    return env.get("MLFLOW_TRACKING_URI") or f"sqlite:///{air_home(env) / 'mlflow.db'}"


def export_tracking_uri(environ: MutableMapping[str, str] | None = None) -> str:
    """Put :func:`tracking_uri` in ``MLFLOW_TRACKING_URI`` unless the user set one, so that MLflow in this process
    and in the kernels and terminals it starts reads and writes the store jupyter_air writes to; returns it."""
    env = os.environ if environ is None else environ
    env["MLFLOW_TRACKING_URI"] = tracking_uri(env)
    return env["MLFLOW_TRACKING_URI"]


def same_store(first: str, second: str) -> bool:
    """Whether two tracking URIs name one store (``sqlite:///`` paths compared resolved)."""
    paths = sqlite_path(first), sqlite_path(second)
    if None in paths:
        return first.rstrip("/") == second.rstrip("/")
    return paths[0].expanduser().resolve() == paths[1].expanduser().resolve()


def default_artifact_location(environ: Mapping[str, str] | None = None) -> str:
    """Artifact root of experiments created in a local store: ``<AIR_HOME>/mlartifacts``."""
    return str(air_home(environ) / "mlartifacts")


def sqlite_path(uri: str) -> pathlib.Path | None:
    """The database file of a ``sqlite:///`` tracking URI, else None."""
    scheme, sep, rest = uri.partition(":///")
    if not sep or not (scheme == "sqlite" or scheme.startswith("sqlite+")):
        return None
    path = unquote(rest.split("?", 1)[0])
    return pathlib.Path(path) if path and path != ":memory:" else None


_prepared: set[str] = set()


@contextlib.contextmanager
def store_errors(uri: str | None = None) -> Iterator[None]:
    """Turn a damaged SQLite store, or a full disk under it, into an ``UnusableDatabase`` naming the file."""
    try:
        yield
    except Exception as exc:
        path = sqlite_path(uri or tracking_uri())
        problem = unusable_database(path, exc) if path is not None else None
        if problem is None:
            raise
        raise problem from exc


def prepare_store(uri: str | None = None) -> str:
    """Make the store usable once per process: a SQLite store is created 0600 and its tables are created
    or migrated under a file lock, so concurrent first runs (notebooks, the server, supervisors) never race."""
    uri = uri or tracking_uri()
    if uri in _prepared:
        return uri
    path = sqlite_path(uri)
    if path is not None and path.parent.is_dir():
        if path.parent == air_home():
            private_dir(pathlib.Path(default_artifact_location()))
        with store_errors(uri):
            private_file(path)
            _read_first_page(path)  # a damaged file is said here, without the cost of importing MLflow
            with file_lock(path.with_name(path.name + ".lock")):
                from mlflow.tracking import MlflowClient

                MlflowClient(uri)._tracking_client.store  # noqa: B018, SLF001 - opening it creates or migrates the tables
    _prepared.add(uri)
    return uri


def store_problem(uri: str | None = None) -> str | None:
    """Why the SQLite store cannot be used (a damaged file, a full disk), or None; reads its first page only."""
    try:
        path = sqlite_path(uri or tracking_uri())
    except AirHomeError as err:
        return str(err)
    if path is None or not path.is_file():
        return None
    try:
        _read_first_page(path)
    except sqlite3.Error as exc:
        problem = unusable_database(path, exc)
        return None if problem is None else str(problem)
    return None


def _read_first_page(path: pathlib.Path) -> None:
    """Read the schema of the SQLite file ``path``, read-only: raises ``sqlite3.Error`` when it is damaged."""
    with contextlib.closing(sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True, timeout=BUSY_SECONDS)) as db:
        db.execute("SELECT count(*) FROM sqlite_master").fetchone()


def is_remote(uri: str) -> bool:
    """True when the tracking URI is an HTTP(S) tracking server."""
    return uri.startswith(("http://", "https://"))


def is_local(uri: str) -> bool:
    """True for stores read straight from this machine (a database URL or a local folder)."""
    scheme = uri.split(":", 1)[0] if "://" in uri else "file"
    return scheme in {"file", "sqlite", "postgresql", "mysql", "mssql"} or scheme.startswith(
        ("sqlite+", "postgresql+", "mysql+", "mssql+")
    )


def client(uri: str | None = None):
    """An ``MlflowClient`` on ``uri`` (default :func:`tracking_uri`), its store prepared; imports MLflow."""
    from mlflow.tracking import MlflowClient

    return MlflowClient(prepare_store(uri))


def existing_client(uri: str | None = None):
    """:func:`client` on ``uri``, or None while it is a SQLite store nobody made yet (a reader never creates it)."""
    uri = uri or tracking_uri()
    path = sqlite_path(uri)
    return None if path is not None and not path.is_file() else client(uri)


_said: set[str] = set()


def tracker(uri: str | None = None, wait_seconds: float = 0.0):
    """How this process creates, logs to and ends runs in ``uri`` (default :func:`tracking_uri`), without importing
    MLflow where it can: the REST API of an ``http(s)`` tracking server, or of AIR_HOME's resident MLflow server for
    the embedded store (started here if needed; while it starts, waited for up to ``wait_seconds``, then MLflow's
    client in this process) or for another local store whose server runs (the Jupyter server's UI starts one for
    its store). Otherwise MLflow's client in this process, said once per process."""
    uri = uri or tracking_uri()
    plugin = os.environ.get("MLFLOW_TRACKING_AUTH")
    if is_remote(uri) and not plugin:
        return RestTracking.http(uri)
    if is_local(uri):
        embedded = uri == resident.embedded_uri()
        if embedded and not sqlite_path(uri).is_file():
            # A brand-new store: created here first, so that its server's start does not compete with that.
            tracking = InProcessTracking(uri, client)
            resident.ensure(uri)
            return tracking
        server = resident.ensure(uri) if embedded else resident.find(uri)
        if server is not None and _answers_within(server, wait_seconds):
            return EmbeddedTracking(RestTracking.unix(pathlib.Path(server.socket)), uri)
        if embedded:
            return InProcessTracking(uri, client)  # the server starts meanwhile, for the next calls
    if uri not in _said:
        _said.add(uri)
        why = (
            f"MLFLOW_TRACKING_AUTH={plugin} is an authentication plugin only MLflow's client knows"
            if plugin
            else f"no MLflow server of AIR_HOME serves {uri} (one is started for AIR_HOME's own store only)"
        )
        log.warning(
            "jupyter_air: runs are recorded with MLflow's client in this process (importing MLflow takes a few "
            "seconds): %s.",
            why,
        )
    return InProcessTracking(uri, client)


def _answers_within(server: resident.Server, seconds: float) -> bool:
    """True once ``server`` answers, asked until ``seconds`` have passed or it has exited."""
    deadline = time.monotonic() + seconds
    while not server.answers():
        if time.monotonic() >= deadline or not server.alive():
            return False
        time.sleep(0.2)
    return True


class EmbeddedTracking:
    """The resident server's REST client; should the server be gone (stopped when idle, killed), it is started
    again for later calls and this one carries on with MLflow's client in this process."""

    def __init__(self, rest, uri: str):
        self._active = rest
        self._uri = uri

    @property
    def origin(self) -> str:
        return self._active.origin

    def __getattr__(self, name: str):
        def call(*args, **kwargs):
            try:
                return getattr(self._active, name)(*args, **kwargs)
            except ServerGone:
                if not isinstance(self._active, RestTracking):
                    raise

            if self._uri == resident.embedded_uri():
                log.info("jupyter_air: AIR_HOME's MLflow server is gone; starting it again.")
                resident.ensure(self._uri)
            self._active = InProcessTracking(self._uri, client)
            return getattr(self._active, name)(*args, **kwargs)

        return call


def ensure_experiment(name: str, artifact_location: str | None = None, tracking=None) -> str:
    """The id of experiment ``name``, created (or restored from the trash) if needed, through ``tracking``
    (default :func:`tracker`).

    In a local store the artifacts default to :func:`default_artifact_location` rather than
    MLflow's ``./mlruns`` relative to whatever the current directory happens to be.
    """
    if not name or not name.strip():
        raise ValueError("experiment name is empty: pass a name such as 'my-training'")
    tracking = tracking or tracker()
    experiment = tracking.get_experiment_by_name(name)
    if experiment is not None:
        if experiment.lifecycle_stage == "deleted":
            tracking.restore_experiment(experiment.experiment_id)
        return experiment.experiment_id
    if artifact_location is None and is_local(tracking_uri()):
        artifact_location = pathlib.Path(default_artifact_location()).as_uri()
    elif artifact_location is not None and "://" not in artifact_location:
        artifact_location = pathlib.Path(artifact_location).expanduser().resolve().as_uri()
    try:
        return tracking.create_experiment(
            name, artifact_location=artifact_location, tags={EXPERIMENT_KIND_TAG: MODEL_TRAINING}
        )
    except TrackingError:
        # Another process created it between our lookup and our create.
        experiment = tracking.get_experiment_by_name(name)
        if experiment is None:
            raise
        return experiment.experiment_id
