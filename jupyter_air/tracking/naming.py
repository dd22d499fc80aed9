"""Names jupyter_air gives in MLflow: the default experiment of a notebook (one rule for the runs it creates and the
panel that lists them), the tags it sets on runs (as MLflow names its own in ``mlflow.utils.mlflow_tags``), and the
artifact folders of the logs it uploads."""

from __future__ import annotations

import getpass
import os
import pathlib
import socket
from collections.abc import Mapping


def run_user(environ: Mapping[str, str] | None = None) -> str:
    """Who a run belongs to: ``$JUPYTERHUB_USER`` or the login name."""
    env = os.environ if environ is None else environ
    return env.get("JUPYTERHUB_USER") or getpass.getuser()


def notebook_path(environ: Mapping[str, str] | None = None) -> str | None:
    """The notebook this kernel serves (Jupyter sets ``JPY_SESSION_NAME``), else None."""
    env = os.environ if environ is None else environ
    return env.get("JPY_SESSION_NAME") or None


def default_experiment_name(source: str, environ: Mapping[str, str] | None = None) -> str:
    """``/Users/<user>/<stem of source>`` for a notebook or script path, like MLflow's notebook experiments."""
    return f"/Users/{run_user(environ)}/{pathlib.PurePosixPath(source).stem or source}"


#: What started the run: ``notebook``, ``magic``, ``workload``... (``kind`` in the runs API).
SOURCE_TAG = "air.source"
#: The notebook function or cell a call ran.
FUNCTION_TAG = "air.function"
#: The notebook (path under the server's root) whose kernel made the run.
NOTEBOOK_TAG = "air.notebook_path"
#: Node (host) a run was started on; runs without it were recorded before it existed.
NODE_TAG = "air.node"
#: A call's GPUs, processes and nodes in all, and the Ray cluster it ran on.
GPUS_TAG, WORLD_SIZE_TAG, NODES_TAG, RAY_ADDRESS_TAG = "air.gpus", "air.world_size", "air.nodes", "air.ray_address"
#: ``true`` on a notebook call that runs as a job (``remote=True``).
REMOTE_TAG = "air.remote"
#: The job a run belongs to, its attempt, and (job metadata) its experiment and user.
JOB_TAG, ATTEMPT_TAG, EXPERIMENT_TAG, USER_TAG = "air.job_run_id", "air.attempt", "air.experiment_name", "air.user"
#: The schedule that fired a job, and the fire time it stands for.
SCHEDULE_TAG, SCHEDULED_TIME_TAG = "air.schedule", "air.scheduled_time"
#: Why a run failed, in one line.
ERROR_TAG = "air.error"
#: Where the GPU figures came from (``nvml``, ``simulated``...), how energy was measured, and whether the GPUs
#: were the run's alone.
GPU_SOURCE_TAG, ENERGY_METHOD_TAG, ENERGY_EXCLUSIVE_TAG = "air.gpu_source", "air.energy_method", "air.energy_exclusive"


def call_logs_folder(node: int) -> str:
    """Artifact folder of one node's rank logs of a notebook call."""
    return f"logs/node_{node}"


def attempt_logs_folder(attempt: int, node: int) -> str:
    """Artifact folder of one node's output of a workload attempt."""
    return f"logs/attempt_{attempt}/node_{node}"


def node_name() -> str:
    """This node's name, as the GPU panel shows it."""
    return socket.gethostname()
