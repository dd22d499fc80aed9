"""The root cause of a call that failed on several nodes, from what each node's agent answered (no cluster)."""

from __future__ import annotations

from jupyter_air.cluster.placement import NodeInfo
from jupyter_air.training.cluster_failure import root_cause
from jupyter_air.training.errors import DistributedError

INFOS = [NodeInfo(i, f"node-{i}", f"10.0.0.{i}", f"gpu-0{i}", f"gpu-0{i}", 100 + i) for i in range(3)]


def _failed(rank: int, message: str, exitcode: int = 1, when: float = 0.0) -> dict:
    error = DistributedError(
        f"rank {rank} failed: {message}",
        rank=rank,
        exitcode=exitcode,
        exception_message=message,
        failures={rank: message},
    )
    return {"failure": error, "times": {rank: when}}


def test_a_real_error_is_the_cause_though_a_peers_broken_connection_was_written_first():
    # Given node 0's rank that saw its peer go away first, node 2's rank stopped by the call, node 1's real error
    failures = [
        (0, _failed(0, "Connection closed by peer", when=1.0)),
        (2, _failed(4, "stopped", exitcode=-15, when=0.5)),
        (1, _failed(2, "ValueError: bad batch", when=2.0)),
    ]
    # When the call's error is made
    error = root_cause(failures, INFOS)
    # Then node 1's rank is named with its host, the others after it, and every failed rank is kept
    assert error.node == 1 and error.rank == 2 and error.exception_message == "ValueError: bad batch"
    assert error.args[0].startswith("node 1 (gpu-01, 10.0.0.1): rank 2 failed: ValueError: bad batch (then failed: ")
    assert "node 2 rank 4 (was killed by SIGTERM)" in error.args[0]
    assert "node 0 rank 0 (exited with code 1)" in error.args[0]
    assert error.failures == {0: "Connection closed by peer", 4: "stopped", 2: "ValueError: bad batch"}


def test_among_real_errors_the_earliest_is_the_cause():
    # Given two nodes whose ranks both raised, node 2's first
    failures = [(1, _failed(2, "RuntimeError: late", when=5.0)), (2, _failed(4, "RuntimeError: early", when=3.0))]
    # When the call's error is made, Then node 2's is the cause, alone in its message but for the other
    error = root_cause(failures, INFOS)
    assert (error.node, error.rank) == (2, 4)
    assert error.args[0] == (
        "node 2 (gpu-02, 10.0.0.2): rank 4 failed: RuntimeError: early "
        "(then failed: node 1 rank 2 (exited with code 1))"
    )


def test_a_single_failed_node_says_nothing_more():
    error = root_cause([(0, _failed(1, "KeyError: 'x'"))], INFOS)
    assert error.args[0] == "node 0 (gpu-00, 10.0.0.0): rank 1 failed: KeyError: 'x'"
