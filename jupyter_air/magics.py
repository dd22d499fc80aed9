"""IPython magics (``%load_ext jupyter_air``): ``%%air_distributed``, ``%%air_run``, ``%air_attach``, ``%air_gpu``."""

from __future__ import annotations

import os

from IPython.core.error import UsageError
from IPython.core.magic import Magics, cell_magic, line_magic, magics_class
from IPython.core.magic_arguments import magic_arguments, parse_argstring

from jupyter_air.gpu_table import gpu_table
from jupyter_air.programs import path_first
from jupyter_air.tracking.naming import FUNCTION_TAG, GPUS_TAG, SOURCE_TAG, WORLD_SIZE_TAG
from jupyter_air.tracking.store import export_tracking_uri
from jupyter_air.training import warmup
from jupyter_air.training.api import run_distributed
from jupyter_air.training.cell import (
    is_cell_result,
    register_source,
    run_cell_here,
    run_cell_on_rank,
    scalar_params,
    shipped_namespace,
    unpicklable,
)
from jupyter_air.training.options import from_magic
from jupyter_air.training.options import magic_arguments as run_options
from jupyter_air.training.remote import follow_again
from jupyter_air.training.tracked import active_in_kernel, tracked_run
from jupyter_air.training.warmup import warm_up


def _unquote(value: str | None) -> str | None:
    """IPython keeps the quotes around a quoted magic argument; drop one matching pair."""
    if value and len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        return value[1:-1]
    return value


def _options(args):
    names = ("experiment", "run_name", "ray_address")
    return from_magic(args, **{name: _unquote(getattr(args, name, None)) for name in names})


@magics_class
class AirMagics(Magics):
    """Tracked runs and distributed training from notebook cells."""

    @magic_arguments()
    @run_options()
    @cell_magic
    def air_distributed(self, line, cell):
        """Run this cell on every GPU of the node (torch elastic launch) as one tracked MLflow run;
        with ``--nodes N``, on N nodes of a Ray cluster.

        The notebook names the cell reads are sent to every rank; the names it assigns on rank 0
        come back into the notebook when they can be pickled (the others are listed). RANK,
        LOCAL_RANK, WORLD_SIZE, MASTER_ADDR/PORT and MLFLOW_RUN_ID are set on every rank.
        """
        options = _options(parse_argstring(self.air_distributed, line))
        source = self.shell.transform_cell(cell)
        filename = register_source(source, "air_distributed")
        namespace = shipped_namespace(source, self.shell.user_ns)
        stuck = unpicklable(namespace)
        if stuck:
            names = ", ".join(f"{n} ({t})" for n, t in sorted(stuck.items()))
            raise UsageError(
                f"%%air_distributed: the cell reads notebook names that cannot be sent to the workers: {names}."
                " Create them inside the cell instead."
            )
        results = run_distributed(
            run_cell_on_rank,
            (source, filename, namespace),
            {},
            options,
            source="distributed",  # the panel lists it with .distributed() calls; "magic" is %%air_run
            name="air_distributed cell",
            params=scalar_params(source, namespace),
        )
        self._take_cell_values(results[0])

    def _take_cell_values(self, returned: dict) -> None:
        """The names an ``%%air_distributed`` cell assigned on rank 0, into the notebook."""
        self.shell.user_ns.update(returned["values"])
        if returned["values"]:
            print(f"Returned from rank 0: {', '.join(sorted(returned['values']))}")
        if returned["unpicklable"]:
            kept = ", ".join(f"{n} ({t})" for n, t in sorted(returned["unpicklable"].items()))
            print(f"Not returned (cannot be pickled; they stayed on the workers): {kept}")

    @line_magic
    def air_attach(self, line):
        """Follow a remote call again (``%air_attach JOB_RUN_ID``, also from a new kernel), or show again a call of
        this kernel (its MLflow run id): its card, then its results by rank (an ``%%air_distributed`` cell's names
        come back into the notebook), or its DistributedError."""
        target = _unquote(line.strip())
        if not target:
            raise UsageError("%air_attach: pass the job run id a remote call printed (job-...) or a call's run id")
        results = follow_again(target)
        if results and is_cell_result(results[0]):
            self._take_cell_values(results[0])
            return None
        return results

    @magic_arguments()
    @run_options("experiment", "run_name", "log_system_metrics")
    @cell_magic
    def air_run(self, line, cell):
        """Run this cell in this kernel inside a tracked MLflow run (its `mlflow.log_*` calls go to it).

        The run ends FINISHED, or FAILED when the cell raises (the exception still propagates).
        """
        warmup.wait("tracking")  # never import MLflow beside the warm-up thread
        options = _options(parse_argstring(self.air_run, line))
        source = self.shell.transform_cell(cell)
        filename = register_source(source, "air_run")
        tags = {SOURCE_TAG: "magic", FUNCTION_TAG: "air_run cell", GPUS_TAG: "0", WORLD_SIZE_TAG: "1"}
        with (
            tracked_run(
                experiment=options.experiment,
                run_name=options.run_name,
                tags=tags,
                params={},
                log_system_metrics=options.log_system_metrics,
            ) as run,
            active_in_kernel(run.run.run_id),
        ):
            return run_cell_here(source, filename, self.shell.user_ns)

    @line_magic
    def air_gpu(self, line):
        """Print a table of this node's GPUs now (utilisation, memory, temperature, power, processes)."""
        print(gpu_table())


def load_ipython_extension(ip) -> None:
    """Register the magics (``%load_ext jupyter_air``), put this environment's programs first on ``PATH`` (``!air``
    works in a kernel of an environment that was never activated), point the kernel's MLflow at the store calls
    record into (unless ``MLFLOW_TRACKING_URI`` is set) and prepare MLflow in the background."""
    os.environ["PATH"] = path_first(os.environ.get("PATH"))
    export_tracking_uri()
    ip.register_magics(AirMagics)
    warm_up("tracking")


def unload_ipython_extension(ip) -> None:
    """Remove the magics again (``%unload_ext jupyter_air``)."""
    for kind in ("cell", "line"):
        for name in AirMagics.magics[kind]:
            ip.magics_manager.magics[kind].pop(name, None)
