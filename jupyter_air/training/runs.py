"""The MLflow run of one notebook call: which experiment, nested or resumed, its tags and params."""

from __future__ import annotations

import inspect
import os
import pathlib
import sys

from jupyter_air.jupyter_kernel import in_jupyter_kernel
from jupyter_air.tracking import naming
from jupyter_air.tracking.lifecycle import MAX_PARAM_VALUE_CHARS, ManagedRun, clip
from jupyter_air.tracking.naming import NOTEBOOK_TAG, notebook_path
from jupyter_air.tracking.store import ensure_experiment, tracker, tracking_uri
from jupyter_air.training import kernel_mlflow

#: The source name of a kernel whose notebook is not known (run headless by nbclient or papermill).
UNNAMED_NOTEBOOK = "unnamed-notebook"
#: Names front ends give a kernel's user namespace for its notebook's file (VS Code; IPython's own session).
_NOTEBOOK_VARIABLES = ("__vsc_ipynb_file__", "__session__")


def script_name() -> str:
    """The name of what runs here: the notebook's file as the kernel knows it, else the script's."""
    if in_jupyter_kernel():
        namespace = sys.modules["IPython"].get_ipython().user_ns
        known = next(
            (namespace[k] for k in _NOTEBOOK_VARIABLES if isinstance(namespace.get(k), str) and namespace[k]), ""
        )
        return pathlib.PurePath(known).stem or UNNAMED_NOTEBOOK  # never the kernel's launcher module
    main = sys.modules.get("__main__")
    path = getattr(main, "__file__", None) or (sys.argv[0] if sys.argv and sys.argv[0] else "python")
    return pathlib.Path(path).stem or "python"


def default_experiment_name() -> str:
    """``/Users/<user>/<notebook or script name>``, like MLflow's notebook experiments."""
    return naming.default_experiment_name(notebook_path() or script_name())


def resolve_experiment(explicit: str | None, parent_experiment_id: str | None = None, tracking=None) -> str:
    """Experiment id, first rule that applies: ``explicit``, the parent run's, ``mlflow.set_experiment`` (or
    ``MLFLOW_EXPERIMENT_ID``) resolved in the call's store, ``MLFLOW_EXPERIMENT_NAME``, then
    :func:`default_experiment_name`."""
    tracking = tracking or tracker()
    if explicit:
        return ensure_experiment(explicit, tracking=tracking)
    if parent_experiment_id:
        return parent_experiment_id
    chosen = kernel_mlflow.experiment_id(tracking)
    if chosen:
        return chosen
    return ensure_experiment(os.environ.get("MLFLOW_EXPERIMENT_NAME") or default_experiment_name(), tracking=tracking)


def experiment_name(explicit: str | None) -> str:
    """The name of the experiment a call records into, by :func:`resolve_experiment`'s rules (without a parent run,
    nothing created): for a call run elsewhere, as a job."""
    return (
        explicit
        or kernel_mlflow.chosen_experiment_name()
        or os.environ.get("MLFLOW_EXPERIMENT_NAME")
        or default_experiment_name()
    )


def source_tags() -> dict[str, str]:
    """Where a call comes from: the notebook (or script), this node, the user."""
    path = notebook_path()
    return {
        "mlflow.source.name": path or script_name(),
        "mlflow.source.type": "NOTEBOOK" if path else "LOCAL",
        **({NOTEBOOK_TAG: path} if path else {}),
        naming.NODE_TAG: naming.node_name(),
        "mlflow.user": naming.run_user(),
    }


def call_params(function, args: tuple, kwargs: dict) -> dict[str, str]:
    """The call's arguments by parameter name (defaults included), as MLflow params."""
    try:
        bound = inspect.signature(function).bind(*args, **kwargs)
    except (TypeError, ValueError):
        return {f"arg_{i}": clip(a, MAX_PARAM_VALUE_CHARS) for i, a in enumerate(args)} | {
            k: clip(v, MAX_PARAM_VALUE_CHARS) for k, v in kwargs.items()
        }
    bound.apply_defaults()
    params = {}
    for name, value in bound.arguments.items():
        kind = bound.signature.parameters[name].kind
        if kind is inspect.Parameter.VAR_KEYWORD:
            params.update({k: clip(v, MAX_PARAM_VALUE_CHARS) for k, v in value.items()})
        else:
            params[name] = clip(value, MAX_PARAM_VALUE_CHARS)
    return params


def check_resume() -> None:
    """Fail at once, before any process starts, when ``MLFLOW_RUN_ID`` names no run of the call's store."""
    if os.environ.get("MLFLOW_RUN_ID"):
        kernel_mlflow.resumed(tracker())


def create_run(*, experiment: str | None, run_name: str | None, tags: dict[str, str]) -> ManagedRun:
    """Create the call's run with its tags (a child of the kernel's active run), or resume ``MLFLOW_RUN_ID``.

    Only what the workers need is settled here; the link, params and system metrics can follow
    while the workers start.
    """
    found = {**source_tags(), **tags}
    user = found.pop("mlflow.user")
    tracking = tracker()
    resume_id = kernel_mlflow.resumed(tracking)
    if resume_id:
        return ManagedRun.resume(resume_id, run_name=run_name, tags=found, tracking=tracking)
    parent_id, parent_experiment = kernel_mlflow.parent(tracking)
    experiment_id = resolve_experiment(experiment, parent_experiment, tracking)
    parent = {"mlflow.parentRunId": parent_id} if parent_id else {}
    return ManagedRun.create(
        experiment_id, run_name=run_name, tags={"mlflow.user": user, **found, **parent}, tracking=tracking
    )


def worker_environment(run: ManagedRun) -> dict[str, str]:
    """Variables that let workers log to the run with ``mlflow.start_run(run_id=os.environ["MLFLOW_RUN_ID"])``."""
    return {
        "MLFLOW_TRACKING_URI": tracking_uri(),
        "MLFLOW_EXPERIMENT_ID": run.experiment_id,
        "MLFLOW_RUN_ID": run.run_id,
    }
