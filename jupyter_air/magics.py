"""IPython magics: ``%%air_distributed``, ``%%air_run`` and ``%air_gpu`` (``%load_ext jupyter_air``)."""

from __future__ import annotations

import ast
import contextlib
import itertools
import linecache
import os

from IPython.core.error import UsageError
from IPython.core.magic import Magics, cell_magic, line_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments, parse_argstring

_cell_numbers = itertools.count(1)


def _register_cell(source: str, kind: str) -> str:
    """Give the cell a file name whose source lines tracebacks can show (here and in workers)."""
    filename = f"<{kind} cell {next(_cell_numbers)}>"
    lines = source.splitlines(keepends=True)
    linecache.cache[filename] = (len(source), None, lines, filename)
    return filename


@contextlib.contextmanager
def _active_in_kernel(run_id: str):
    """Make the run the kernel's active MLflow run, so ``mlflow.log_*`` in the cell goes to it."""
    import mlflow

    from jupyter_air.tracking.store import tracking_uri

    saved = {k: os.environ.get(k) for k in ("MLFLOW_TRACKING_URI", "MLFLOW_RUN_ID")}
    os.environ["MLFLOW_TRACKING_URI"] = tracking_uri()
    try:
        mlflow.start_run(run_id=run_id, nested=mlflow.active_run() is not None)
        try:
            yield
        finally:
            mlflow.end_run()
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def _unquote(value: str | None) -> str | None:
    """IPython keeps the quotes around a quoted magic argument; drop one matching pair."""
    if value and len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        return value[1:-1]
    return value


def _run_cell_here(source: str, filename: str, namespace: dict):
    """Execute the cell in the notebook's namespace; its last expression's value is the magic's result."""
    tree = ast.parse(source, filename)
    last = tree.body.pop() if tree.body and isinstance(tree.body[-1], ast.Expr) else None
    exec(compile(tree, filename, "exec"), namespace)  # noqa: S102 - running the user's own cell is the point
    if last is not None:
        return eval(compile(ast.Expression(last.value), filename, "eval"), namespace)  # noqa: S307
    return None


def _scalar_params(namespace: dict) -> dict[str, str]:
    return {k: repr(v) for k, v in namespace.items() if isinstance(v, (bool, int, float, str)) and len(repr(v)) < 500}


@magics_class
class AirMagics(Magics):
    """Tracked runs and distributed training from notebook cells."""

    @magic_arguments()
    @argument("--gpus", type=int, default=None, help="processes to start, one per GPU (default: every visible GPU; on a node without GPUs, N CPU processes, 1 by default)")
    @argument("--experiment", default=None, help="MLflow experiment name (default: mlflow.set_experiment's, MLFLOW_EXPERIMENT_NAME, then /Users/<user>/<notebook>)")
    @argument("--run-name", default=None, help="MLflow run name (default: a generated one)")
    @argument("--timeout", type=float, default=None, help="seconds after which a hung call is stopped (default: no limit)")
    @argument("--no-system-metrics", action="store_true", help="do not record CPU, memory and GPU metrics in the run")
    @cell_magic
    def air_distributed(self, line, cell):
        """Run this cell on every GPU of the node (torch elastic launch) as one tracked MLflow run.

        The notebook names the cell reads are sent to every rank; the names it assigns on rank 0
        come back into the notebook when they can be pickled (the others are listed). RANK,
        LOCAL_RANK, WORLD_SIZE, MASTER_ADDR/PORT and MLFLOW_RUN_ID are set on every rank.
        """
        from jupyter_air.training.api import run_distributed
        from jupyter_air.training.cell import run_cell_on_rank, shipped_namespace, unpicklable

        args = parse_argstring(self.air_distributed, line)
        source = self.shell.transform_cell(cell)
        filename = _register_cell(source, "air_distributed")
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
            gpus=args.gpus,
            experiment=_unquote(args.experiment),
            run_name=_unquote(args.run_name),
            log_system_metrics=not args.no_system_metrics,
            timeout=args.timeout,
            source="magic",
            name="air_distributed cell",
            params=_scalar_params(namespace),
        )
        returned = results[0]
        self.shell.user_ns.update(returned["values"])
        if returned["values"]:
            print(f"Returned from rank 0: {', '.join(sorted(returned['values']))}")
        if returned["unpicklable"]:
            kept = ", ".join(f"{n} ({t})" for n, t in sorted(returned["unpicklable"].items()))
            print(f"Not returned (cannot be pickled; they stayed on the workers): {kept}")

    @magic_arguments()
    @argument("--experiment", default=None, help="MLflow experiment name (default: mlflow.set_experiment's, MLFLOW_EXPERIMENT_NAME, then /Users/<user>/<notebook>)")
    @argument("--run-name", default=None, help="MLflow run name (default: a generated one)")
    @argument("--no-system-metrics", action="store_true", help="do not record CPU, memory and GPU metrics in the run")
    @cell_magic
    def air_run(self, line, cell):
        """Run this cell in this kernel inside a tracked MLflow run (its `mlflow.log_*` calls go to it).

        The run ends FINISHED, or FAILED when the cell raises (the exception still propagates).
        """
        from jupyter_air.training.tracked import tracked_run

        args = parse_argstring(self.air_run, line)
        source = self.shell.transform_cell(cell)
        filename = _register_cell(source, "air_run")
        tags = {"air.source": "magic", "air.function": "air_run cell", "air.gpus": "0", "air.world_size": "1"}
        with tracked_run(
            experiment=_unquote(args.experiment),
            run_name=_unquote(args.run_name),
            tags=tags,
            params={},
            log_system_metrics=not args.no_system_metrics,
        ) as run, _active_in_kernel(run.run.run_id):
            return _run_cell_here(source, filename, self.shell.user_ns)

    @line_magic
    def air_gpu(self, line):
        """Print a table of this node's GPUs now (utilisation, memory, temperature, power, processes)."""
        from jupyter_air.gpu_table import gpu_table

        print(gpu_table())


def load_ipython_extension(ip) -> None:
    """Register the magics (``%load_ext jupyter_air``)."""
    ip.register_magics(AirMagics)


def unload_ipython_extension(ip) -> None:
    """Remove the magics again (``%unload_ext jupyter_air``)."""
    for kind in ("cell", "line"):
        for name in AirMagics.magics[kind]:
            ip.magics_manager.magics[kind].pop(name, None)
