"""The root cause of a call that failed on several Ray nodes: what each node's ranks reported, ranked so that the
first real failure is named, never a rank that only saw its peer go away or that the call itself stopped."""

from __future__ import annotations

from collections.abc import Sequence

from jupyter_air.cluster.placement import NodeInfo
from jupyter_air.training.errors import DistributedError, describe_exit

#: What a rank reports when another rank died first: never the root cause while a real error exists.
PEER_ERRORS = (
    "Connection closed by peer",
    "Connection reset by peer",
    "Broken pipe",
    "NCCL communicator was aborted",
    "Socket Timeout",
)
#: Exit codes of ranks the call stopped (SIGTERM, SIGKILL).
_SIGNALLED = {-15, -9}


def root_cause(failures: list[tuple[int, dict]], infos: Sequence[NodeInfo]) -> DistributedError:
    """The call's error from ``failures`` (``(node, {"failure": DistributedError, "times": {rank: when}})``, what
    each failed node's agent answered): a peer's "connection closed" or a rank we stopped comes last, then the
    earliest error file; the others are named after it."""

    def order(item):
        _, outcome = item
        error: DistributedError = outcome["failure"]
        text = f"{error.args[0]} {error.exception_message or ''}"
        secondary = error.exitcode in _SIGNALLED or any(p in text for p in PEER_ERRORS)
        return (secondary, min(outcome["times"].values(), default=float("inf")))

    ranked = sorted(failures, key=order)
    node, first = ranked[0][0], ranked[0][1]["failure"]
    failed = {rank: text for _, outcome in failures for rank, text in outcome["failure"].failures.items()}
    after = ", ".join(
        f"node {n} rank {o['failure'].rank} ({describe_exit(o['failure'].exitcode)})" for n, o in ranked[1:]
    )
    info = infos[node]
    then = f" (then failed: {after})" if after else ""
    return DistributedError(
        f"node {node} ({info.hostname}, {info.ip}): {first.args[0]}{then}",
        rank=first.rank,
        node=node,
        exitcode=first.exitcode,
        exception_type=first.exception_type,
        exception_message=first.exception_message,
        worker_traceback=first.worker_traceback,
        failures=failed,
    )
