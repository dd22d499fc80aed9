"""The options of a distributed call, defined once for ``@distributed``, ``.distributed()`` and the magics."""

from __future__ import annotations

import dataclasses
import difflib
import inspect

from jupyter_air.cluster.address import check


def _option(default, flag: str, help: str, kind=None):
    return dataclasses.field(default=default, metadata={"flag": flag, "help": help, "type": kind})


@dataclasses.dataclass(frozen=True)
class RunOptions:
    """How a call runs and where it is recorded; checked when the call is defined, not when it runs."""

    gpus: int | None = _option(
        None,
        "--gpus",
        "processes to start, one per GPU (default: every visible GPU; on a node without GPUs, "
        "N CPU processes, 1 by default)",
        int,
    )
    experiment: str | None = _option(
        None,
        "--experiment",
        "MLflow experiment name (default: mlflow.set_experiment's, MLFLOW_EXPERIMENT_NAME, "
        "then /Users/<user>/<notebook>)",
        str,
    )
    run_name: str | None = _option(None, "--run-name", "MLflow run name (default: a generated one)", str)
    log_system_metrics: bool = _option(
        True, "--no-system-metrics", "do not record CPU, memory and GPU metrics in the run"
    )
    timeout: float | None = _option(
        None, "--timeout", "seconds after which a hung call is stopped (default: no limit)", float
    )
    nodes: int = _option(
        1,
        "--nodes",
        "Ray nodes to spread the call over, the GPUs of each (default 1: this node, without Ray)",
        int,
    )
    ray_address: str | None = _option(
        None,
        "--ray-address",
        "the Ray cluster: 'auto' on one of its nodes, 'host:6379' or 'ray://host:10001' (default: "
        "$AIR_RAY_ADDRESS, set by the Jupyter server from c.JupyterAir.ray_address); given, even one node runs "
        "on the cluster",
        str,
    )
    remote: bool = _option(
        False,
        "--remote",
        "submit the call as a job that outlives the kernel (a Ray Job on a cluster, else a detached job on this "
        "machine); the cell follows it, an interrupt stops following, never the job (`%air_attach JOB` follows it "
        "again)",
    )

    wait: bool = _option(
        True,
        "--no-wait",
        "start now or fail, saying who holds the GPUs, when they are busy (default: wait in line for them)",
    )

    def __post_init__(self):
        gpus, timeout, nodes = self.gpus, self.timeout, self.nodes
        if gpus is not None and (isinstance(gpus, bool) or not isinstance(gpus, int) or gpus < 1):
            raise ValueError(f"gpus must be a positive whole number or None (every visible GPU), got {gpus!r}")
        if timeout is not None and (
            isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not timeout > 0
        ):
            raise ValueError(f"timeout must be a positive number of seconds or None, got {timeout!r}")
        if isinstance(nodes, bool) or not isinstance(nodes, int) or nodes < 1:
            raise ValueError(f"nodes must be a positive whole number of Ray nodes, got {nodes!r}")
        for name in ("remote", "wait"):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"{name} must be True or False, got {getattr(self, name)!r}")
        if self.ray_address is not None:
            check(self.ray_address)

    @classmethod
    def of(cls, options: dict) -> RunOptions:
        """``RunOptions(**options)``, an unknown name refused with the names allowed (and a close one)."""
        names = [f.name for f in dataclasses.fields(cls)]
        for name in options:
            if name not in names:
                close = difflib.get_close_matches(name, names, n=1)
                hint = f"did you mean {close[0]!r}? " if close else ""
                raise TypeError(f"unknown option {name!r}: {hint}the options are {', '.join(names)}")
        return cls(**options)

    @classmethod
    def signature(cls) -> list[inspect.Parameter]:
        """The options as keyword-only parameters, so help() and the notebook's tooltips show them."""
        return [
            inspect.Parameter(f.name, inspect.Parameter.KEYWORD_ONLY, default=f.default, annotation=f.type)
            for f in dataclasses.fields(cls)
        ]


def magic_arguments(*names: str):
    """IPython ``@argument`` decorators for the named options (every one by default), with their help."""
    from IPython.core.magic_arguments import argument

    fields = [f for f in dataclasses.fields(RunOptions) if not names or f.name in names]

    def decorate(function):
        for field in reversed(fields):
            meta = field.metadata
            if field.type in (bool, "bool"):
                function = argument(meta["flag"], action="store_true", help=meta["help"])(function)
            else:
                function = argument(meta["flag"], type=meta["type"], default=None, help=meta["help"])(function)
        return function

    return decorate


def from_magic(args, **unquoted) -> RunOptions:
    """The options parsed by :func:`magic_arguments` (``unquoted``: values whose quotes were dropped)."""
    values = {}
    for field in dataclasses.fields(RunOptions):
        attr = field.metadata["flag"].lstrip("-").replace("-", "_")
        if not hasattr(args, attr):
            continue
        value = getattr(args, attr)
        if field.type in (bool, "bool"):
            values[field.name] = not value if field.metadata["flag"].startswith("--no-") else value
        elif value is not None:  # a flag not given keeps the option's default
            values[field.name] = unquoted.get(field.name) or value
    return RunOptions(**values)
