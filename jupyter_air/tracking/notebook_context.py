"""An MLflow run context provider (entry point ``mlflow.run_context_provider``): runs that a notebook starts with
plain MLflow (``mlflow.start_run()``, autologging) are tagged with the notebook, the node and the user as jupyter_air
tags its own, so the Experiment panel lists them with the notebook's runs."""

from __future__ import annotations

from mlflow.tracking.context.abstract_context import RunContextProvider

from jupyter_air.tracking import naming


class NotebookRunContext(RunContextProvider):
    """In a kernel of a Jupyter server (``JPY_SESSION_NAME`` set): the notebook's tags on each new run."""

    def in_context(self) -> bool:
        return naming.notebook_path() is not None

    def tags(self) -> dict[str, str]:
        path = naming.notebook_path() or ""
        return {
            "mlflow.source.name": path,
            "mlflow.source.type": "NOTEBOOK",
            naming.NOTEBOOK_TAG: path,
            naming.NODE_TAG: naming.node_name(),
            "mlflow.user": naming.run_user(),
        }
