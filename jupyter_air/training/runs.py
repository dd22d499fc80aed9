"""The MLflow run of one call: which experiment, nested or resumed, tags, params and final status."""

from __future__ import annotations

import dataclasses
import getpass
import inspect
import os
import pathlib
import sys

from jupyter_air.tracking.store import client, ensure_experiment, run_url, tracking_uri

#: Longest parameter value MLflow stores.
_PARAM_MAX_CHARS = 6000
_TAG_MAX_CHARS = 5000


@dataclasses.dataclass
class RunInfo:
    experiment_id: str
    experiment_name: str
    run_id: str
    run_name: str
    resumed: bool
    url: str | None


def notebook_path() -> str | None:
    """The notebook this kernel serves (Jupyter sets ``JPY_SESSION_NAME``), else None."""
    return os.environ.get("JPY_SESSION_NAME") or None


def _script_name() -> str:
    main = sys.modules.get("__main__")
    path = getattr(main, "__file__", None) or (sys.argv[0] if sys.argv and sys.argv[0] else "python")
    return pathlib.Path(path).stem or "python"


def default_experiment_name() -> str:
    """``/Users/<user>/<notebook or script name>``, like MLflow's notebook experiments."""
    user = os.environ.get("JUPYTERHUB_USER") or getpass.getuser()
    path = notebook_path()
    name = pathlib.PurePosixPath(path).stem if path else _script_name()
    return f"/Users/{user}/{name}"


def _kernel_experiment_id() -> str | None:
    """The experiment chosen with ``mlflow.set_experiment()`` in this process, if any."""
    fluent = sys.modules.get("mlflow.tracking.fluent")
    chosen = getattr(fluent, "_active_experiment_id", None) if fluent else None
    return chosen or os.environ.get("MLFLOW_EXPERIMENT_ID") or None


def _active_run_id() -> str | None:
    """The run started with ``mlflow.start_run()`` in this process and still active, if any."""
    if "mlflow" not in sys.modules:
        return None
    active = sys.modules["mlflow"].active_run()
    return active.info.run_id if active else None


def _parent_in_store(mlflow_client) -> tuple[str | None, str | None]:
    """``(run id, experiment id)`` of the kernel's active run when it lives in this store, else Nones."""
    from mlflow.exceptions import MlflowException

    parent_id = _active_run_id()
    if not parent_id:
        return None, None
    try:
        return parent_id, mlflow_client.get_run(parent_id).info.experiment_id
    except MlflowException:
        return None, None  # active in another tracking store: the new run cannot be its child


def resolve_experiment(explicit: str | None, parent_experiment_id: str | None = None) -> str:
    """Experiment id, first rule that applies: ``explicit``, the parent run's, ``mlflow.set_experiment``,
    ``MLFLOW_EXPERIMENT_NAME``, then :func:`default_experiment_name`."""
    if explicit:
        return ensure_experiment(explicit)
    if parent_experiment_id:
        return parent_experiment_id
    chosen = _kernel_experiment_id()
    if chosen:
        return chosen
    return ensure_experiment(os.environ.get("MLFLOW_EXPERIMENT_NAME") or default_experiment_name())


def _clip(value: object, limit: int) -> str:
    text = value if isinstance(value, str) else repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def call_params(function, args: tuple, kwargs: dict) -> dict[str, str]:
    """The call's arguments by parameter name (defaults included), as MLflow params."""
    try:
        bound = inspect.signature(function).bind(*args, **kwargs)
    except (TypeError, ValueError):
        return {f"arg_{i}": _clip(a, _PARAM_MAX_CHARS) for i, a in enumerate(args)} | {
            k: _clip(v, _PARAM_MAX_CHARS) for k, v in kwargs.items()
        }
    bound.apply_defaults()
    params = {}
    for name, value in bound.arguments.items():
        kind = bound.signature.parameters[name].kind
        if kind is inspect.Parameter.VAR_KEYWORD:
            params.update({k: _clip(v, _PARAM_MAX_CHARS) for k, v in value.items()})
        else:
            params[name] = _clip(value, _PARAM_MAX_CHARS)
    return params


def create_run(*, experiment: str | None, run_name: str | None, tags: dict[str, str]) -> RunInfo:
    """Create the call's run with its tags (a child of the kernel's active run), or resume ``MLFLOW_RUN_ID``.

    Only what the workers need is settled here; :func:`describe` and :func:`log_params` can run
    while the workers start.
    """
    from mlflow.entities import RunTag

    mlflow_client = client()
    path = notebook_path()
    all_tags = {
        "mlflow.user": os.environ.get("JUPYTERHUB_USER") or getpass.getuser(),
        "mlflow.source.name": path or _script_name(),
        "mlflow.source.type": "NOTEBOOK" if path else "LOCAL",
        **({"air.notebook_path": path} if path else {}),
        **tags,
    }
    all_tags = {k: _clip(v, _TAG_MAX_CHARS) for k, v in all_tags.items()}
    resume_id = os.environ.get("MLFLOW_RUN_ID")
    if resume_id:
        run = mlflow_client.get_run(resume_id)
        mlflow_client.update_run(resume_id, status="RUNNING", name=run_name)
        del all_tags["mlflow.user"]
        mlflow_client.log_batch(resume_id, tags=[RunTag(k, v) for k, v in all_tags.items()])
    else:
        parent_id, parent_experiment = _parent_in_store(mlflow_client)
        experiment_id = resolve_experiment(experiment, parent_experiment)
        if parent_id:
            all_tags["mlflow.parentRunId"] = parent_id
        run = mlflow_client.create_run(experiment_id, run_name=run_name, tags=all_tags)
    return RunInfo(
        experiment_id=run.info.experiment_id,
        experiment_name="",
        run_id=run.info.run_id,
        run_name=run_name or run.info.run_name,
        resumed=bool(resume_id),
        url=None,
    )


def describe(run: RunInfo) -> None:
    """Fill in the experiment's name and the link that opens the run."""
    run.experiment_name = client().get_experiment(run.experiment_id).name
    run.url = run_url(run.experiment_id, run.run_id)


def log_params(run: RunInfo, params: dict[str, str]) -> None:
    """Record the call's parameters (a resumed run keeps the values it already has)."""
    from mlflow.entities import Param

    mlflow_client = client()
    existing = set(mlflow_client.get_run(run.run_id).data.params) if run.resumed else set()
    fresh = [Param(k, v) for k, v in params.items() if k not in existing]
    if fresh:
        mlflow_client.log_batch(run.run_id, params=fresh)


def worker_environment(run: RunInfo) -> dict[str, str]:
    """Variables that let workers log to the run with ``mlflow.start_run(run_id=os.environ["MLFLOW_RUN_ID"])``."""
    return {
        "MLFLOW_TRACKING_URI": tracking_uri(),
        "MLFLOW_EXPERIMENT_ID": run.experiment_id,
        "MLFLOW_RUN_ID": run.run_id,
    }


def upload_logs(run: RunInfo, paths: list[pathlib.Path], node: int = 0) -> None:
    """Store each rank's log file as the run's artifact ``logs/node_<node>/rank_<N>.log``."""
    mlflow_client = client()
    for path in paths:
        if path.exists():
            mlflow_client.log_artifact(run.run_id, str(path), artifact_path=f"logs/node_{node}")


def end_run(run: RunInfo, status: str, error: str | None = None) -> None:
    """Set the run's final status (the launcher's word is final, whatever the workers set)."""
    mlflow_client = client()
    if error:
        mlflow_client.set_tag(run.run_id, "air.error", _clip(error, _TAG_MAX_CHARS))
    mlflow_client.set_terminated(run.run_id, status=status)
