"""MLflow's ``sqlite`` tracking store for every process of this environment (entry point ``mlflow.tracking_store``),
with one change: AIR_HOME's embedded store keeps the artifacts of experiments made without an artifact location
(``mlflow.set_experiment`` in a notebook) under ``AIR_HOME/mlartifacts``, where jupyter_air's own go, instead of
MLflow's ``./mlruns`` beside whatever the working folder is (beside the notebook, for a kernel)."""

from __future__ import annotations

from jupyter_air.home import air_home_path
from jupyter_air.tracking.store import default_artifact_location, sqlite_path


def sqlite_store(store_uri: str, artifact_uri: str | None = None):
    """MLflow's SQLAlchemy store for ``store_uri``; for AIR_HOME's store, AIR_HOME's artifact folder by default."""
    from mlflow.tracking._tracking_service.utils import _get_sqlalchemy_store  # the builder MLflow registers

    path = sqlite_path(store_uri)
    if artifact_uri is None and path is not None and path.resolve() == air_home_path() / "mlflow.db":
        artifact_uri = default_artifact_location()
    return _get_sqlalchemy_store(store_uri, artifact_uri)
