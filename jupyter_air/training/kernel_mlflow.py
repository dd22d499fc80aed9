"""What the kernel's own MLflow chose (``mlflow.set_experiment``, ``mlflow.start_run``, ``MLFLOW_RUN_ID``), resolved in
the store a call records into: an experiment by name, a run by an id checked to exist there, and one line said when
the kernel's MLflow tracks into another store."""

from __future__ import annotations

import os
import sys

from jupyter_air.tracebacks import render
from jupyter_air.tracking.entities import TrackingError
from jupyter_air.tracking.store import ensure_experiment, same_store, tracker, tracking_uri


class KernelTrackingError(TrackingError):
    """What the kernel's MLflow chose cannot be used by a call; the message names it, the store and the fix.

    In IPython it shows as that one line (with the user's own frames), not jupyter_air's frames."""

    def __init__(self, message: str):
        super().__init__(message, "RESOURCE_DOES_NOT_EXIST")

    def _render_traceback_(self) -> list[str]:
        return render(self, f"{type(self).__name__}: {self}")


def say(line: str) -> None:
    """One line to the notebook (stderr) about what a call did with the kernel's MLflow state."""
    print(f"jupyter_air: {line}", file=sys.stderr)


def kernel_uri() -> str | None:
    """The tracking URI of the kernel's own MLflow once it is imported (``mlflow.set_tracking_uri`` included)."""
    mlflow = sys.modules.get("mlflow")
    return mlflow.get_tracking_uri() if mlflow is not None and hasattr(mlflow, "get_tracking_uri") else None


def elsewhere() -> str | None:
    """The kernel MLflow's tracking URI when it is not the store calls record into, else None."""
    uri = kernel_uri()
    return None if uri is None or same_store(uri, tracking_uri()) else uri


def chosen_experiment_id() -> str | None:
    """The experiment chosen with ``mlflow.set_experiment()`` in this process or ``MLFLOW_EXPERIMENT_ID``, an id of
    the kernel MLflow's store."""
    fluent = sys.modules.get("mlflow.tracking.fluent")
    chosen = getattr(fluent, "_active_experiment_id", None) if fluent else None
    return chosen or os.environ.get("MLFLOW_EXPERIMENT_ID") or None


def chosen_experiment_name() -> str | None:
    """The name of the experiment the kernel chose (read from the kernel MLflow's own store), or None."""
    chosen = chosen_experiment_id()
    if not chosen:
        return None
    other = elsewhere()
    if other is None:
        return _named(chosen, lambda: tracker().get_experiment(chosen).name, tracking_uri())
    return _named(chosen, lambda: sys.modules["mlflow"].get_experiment(chosen).name, other)


def experiment_id(tracking) -> str | None:
    """The kernel's chosen experiment as an id of the store ``tracking`` writes to: the same id when the kernel's
    MLflow tracks there (checked to exist), else the experiment of the same name there (made if missing, said)."""
    chosen = chosen_experiment_id()
    if not chosen:
        return None
    other = elsewhere()
    if other is None:
        _named(chosen, lambda: tracking.get_experiment(chosen).name, tracking_uri())
        return chosen
    name = _named(chosen, lambda: sys.modules["mlflow"].get_experiment(chosen).name, other)
    found = ensure_experiment(name, tracking=tracking)
    say(
        f"this kernel's MLflow tracks into {other}, calls into {tracking_uri()}: the call records into experiment "
        f"{name!r} there (id {found}), found by name (it is id {chosen} in the kernel's store)."
    )
    return found


def _named(chosen: str, read, uri: str) -> str:
    try:
        return read()
    except Exception as exc:  # noqa: BLE001 - MLflow's or our REST client's error: both say "not found"
        raise KernelTrackingError(
            f"experiment id {chosen} (mlflow.set_experiment or MLFLOW_EXPERIMENT_ID) is not in {uri}: "
            f"{getattr(exc, 'message', exc)}. Choose the experiment by name with mlflow.set_experiment('name') or "
            "experiment='name', or unset MLFLOW_EXPERIMENT_ID."
        ) from None


def active_run_id() -> str | None:
    """The run started with ``mlflow.start_run()`` in this process and still active, if any."""
    if "mlflow" not in sys.modules:
        return None
    active = sys.modules["mlflow"].active_run()
    return active.info.run_id if active else None


def parent(tracking) -> tuple[str | None, str | None]:
    """``(run id, experiment id)`` of the kernel's active run when it lives in the store ``tracking`` writes to;
    else Nones, said in one line (a run of another store cannot be the parent of the call's run)."""
    parent_id = active_run_id()
    if not parent_id:
        return None, None
    try:
        return parent_id, tracking.get_run(parent_id).info.experiment_id
    except TrackingError:
        say(
            f"the kernel's active MLflow run {parent_id} is in {kernel_uri()}, not in {tracking_uri()} where this "
            "call is recorded: the call's run is not nested under it."
        )
        return None, None


def resumed(tracking) -> str | None:
    """``MLFLOW_RUN_ID`` when set, checked to name a run of the store ``tracking`` writes to (else one line that
    names the run and the store, at once)."""
    run_id = os.environ.get("MLFLOW_RUN_ID")
    if not run_id:
        return None
    try:
        tracking.get_run(run_id)
    except TrackingError as err:
        raise KernelTrackingError(
            f"MLFLOW_RUN_ID={run_id} names no run of {tracking_uri()}, the store this call records into "
            f"({err.message}). Unset MLFLOW_RUN_ID (`del os.environ['MLFLOW_RUN_ID']`) or set it to a run of that "
            "store."
        ) from None
    return run_id
