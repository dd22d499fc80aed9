"""A job's supervisor as a Ray Job: submitted to the cluster's job server, its status read back, stopped.

The supervisor is the job's Ray driver. As a Ray Job it is started and owned by Ray's job supervisor actor, so
killing ``air``, the Jupyter server or the kernel that submitted it does not stop it. Its entrypoint is pinned
to this machine's Ray node (the resource ``node:<address>``): the job's store, logs and MLflow settings are
this machine's ``AIR_HOME``. Ray's own client sends the cluster's token (``RAY_AUTH_MODE=token``) itself.
"""

from __future__ import annotations

import contextlib
import shlex
import threading
from dataclasses import dataclass
from pathlib import Path

from jupyter_air.cluster.connect import connect
from jupyter_air.cluster.errors import ClusterUnreachable

#: Seconds Ray's job supervisor waits after its SIGTERM before it SIGKILLs ours: time for ours to stop every
#: node (SIGTERM, SIGKILL after ``procs.TERM_GRACE_SECONDS``) and to end the attempt's run.
STOP_WAIT_SECONDS = 30
#: Ray's statuses of a job whose driver has not ended.
ACTIVE = ("PENDING", "RUNNING")
#: A sliver of this node's own resource: enough to pin the entrypoint here, never enough to crowd anything out.
_PIN = 0.001

_clients: dict[str, object] = {}
_lock = threading.Lock()


@dataclass(frozen=True)
class RayJobState:
    """What Ray says of a job: its status (None when Ray does not know it), and Ray's message."""

    status: str | None
    message: str


def dashboard_url(address: str) -> str:
    """The URL of the job server of the cluster this process joined at ``address`` (read from its GCS)."""
    from ray._private import ray_constants
    from ray.experimental.internal_kv import _internal_kv_get

    found = _internal_kv_get(ray_constants.DASHBOARD_ADDRESS, namespace=ray_constants.KV_NAMESPACE_DASHBOARD)
    if not found:
        raise ClusterUnreachable(
            f"the Ray cluster at {address} runs no job server (its dashboard is off), so a job cannot run there "
            "detached: start the head with `ray start --head --include-dashboard=true --dashboard-host=<an address "
            "this machine reaches>` (and token authentication, see the security model)"
        )
    return f"http://{found.decode()}"


def client(url: str):
    """Ray's job client for the job server at ``url``, made once per process."""
    from ray.job_submission import JobSubmissionClient

    with _lock:
        if url not in _clients:
            try:
                _clients[url] = JobSubmissionClient(url)
            except (ConnectionError, RuntimeError) as exc:
                raise ClusterUnreachable(f"the Ray job server at {url} does not answer: {exc}") from None
        return _clients[url]


def this_node_address() -> str:
    """The address of this process's own Ray node (the one a pinned entrypoint runs on)."""
    import ray

    node_id = ray.get_runtime_context().get_node_id()
    return next(n["NodeManagerAddress"] for n in ray.nodes() if n["NodeID"] == node_id)


def submit(job_run_id: str, job_dir: Path, argv: list[str], address: str, metadata: dict[str, str]) -> str:
    """Submit the supervisor ``argv`` of ``job_run_id`` as a Ray Job (submission id = the job run id), run in the
    job's folder with its output in ``supervisor.log`` there; returns the job server's URL."""
    connect(address)
    url = dashboard_url(address)
    try:
        client(url).submit_job(
            entrypoint=entrypoint(job_dir, argv),
            submission_id=job_run_id,
            metadata=metadata,
            runtime_env={"env_vars": {"RAY_JOB_STOP_WAIT_TIME_S": str(STOP_WAIT_SECONDS)}},
            **pinned_here(),
        )
    except (ConnectionError, RuntimeError) as exc:
        raise ClusterUnreachable(f"the Ray job server at {url} refused the job: {exc}") from None
    return url


def entrypoint(job_dir: Path, argv: list[str]) -> str:
    """The shell line Ray runs: ``argv`` in the job's folder, its output appended to ``supervisor.log`` there."""
    return f"cd {shlex.quote(str(job_dir))} && exec {shlex.join(argv)} >> supervisor.log 2>&1"


def pinned_here() -> dict:
    """``submit_job`` options that run the entrypoint on this process's node, taking none of its CPUs."""
    return {"entrypoint_num_cpus": 0, "entrypoint_resources": {f"node:{this_node_address()}": _PIN}}


def state(url: str, job_run_id: str) -> RayJobState | None:
    """Ray's status of the job, ``RayJobState(None, ...)`` when Ray does not know it; None when the job server
    cannot be asked now (unreachable: nothing is known)."""
    try:
        info = client(url).get_job_info(job_run_id)
    except ClusterUnreachable:
        return None
    except RuntimeError as exc:
        if "status code 404" in str(exc):
            return RayJobState(None, f"Ray's job server at {url} no longer knows it (the cluster was restarted?)")
        return None
    except OSError:  # the job server went away since the client was made
        return None
    return RayJobState(getattr(info.status, "value", str(info.status)), info.message or "")


def stop(url: str, job_run_id: str) -> None:
    """Ask Ray to stop the job: SIGTERM to the supervisor, SIGKILL after ``STOP_WAIT_SECONDS``."""
    # Gone already, or unreachable: whoever reaps the job stops what is left here.
    with contextlib.suppress(ClusterUnreachable, RuntimeError, OSError):
        client(url).stop_job(job_run_id)
