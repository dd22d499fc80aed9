"""The actor of one node of a workload attempt on a Ray cluster: runs the command there as a NodeProcess."""

from __future__ import annotations

import os
import socket

from jupyter_air.cluster.agent import NodeAgent, read_from
from jupyter_air.tracking.node_metrics import NodeMetrics
from jupyter_air.workloads.state.logs import OUTPUT, TIMESTAMPS
from jupyter_air.workloads.supervisor.node import NodeProcess


class WorkloadAgent(NodeMetrics, NodeAgent):
    """One node of one attempt: the command with its log pump, written to this node's disk and read back."""

    def __init__(self, index: int, parked_seconds: float | None = None):
        super().__init__(index, parked_seconds)
        self.process: NodeProcess | None = None

    def start(self, command: str, cwd: str, overrides: dict[str, str], marker: dict[str, str], umask: int | None):
        """Start the command in this node's environment plus ``overrides`` (Ray set CUDA_VISIBLE_DEVICES)."""
        if not os.path.isdir(cwd):
            raise FileNotFoundError(
                f"code_source.root_path {cwd} does not exist on node {self.index} ({socket.gethostname()}): put the "
                "code on a file system every node mounts at the same path, or in the nodes' image"
            )
        self.release_port()  # node 0: MASTER_PORT, free for the command to listen on
        self.process = NodeProcess(command, cwd, {**os.environ, **overrides}, self.folder / "output", marker, umask)
        self.process.start()

    def poll(self, offsets: dict[str, int]) -> dict:
        """New bytes of the output and its timestamps after ``offsets``; the exit status once the command ended."""
        code = self.process.poll()
        if code is not None:
            self.process.settle()  # its last output written, and a failed write known, before it is judged
        folder = self.process.log_dir
        chunks = {name: read_from(folder / name, offsets.get(name, 0)) for name in (OUTPUT, TIMESTAMPS)}
        return {
            "chunks": chunks,
            "running": code is None,
            "failed": code not in (None, 0) or self.process.problem is not None,
            "exit_code": code,
            "problem": self.process.problem,
        }

    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def join(self, timeout: float) -> None:
        self.process.wait(timeout)

    def stop(self, grace_seconds: float) -> int | None:
        """Stop every process of the command (SIGTERM, SIGKILL after ``grace_seconds``); its exit status."""
        return self.process.stop(grace_seconds) if self.process is not None else None

    def finish(self) -> None:
        """Stop what the command left, let the pump write the rest, take the last metrics sample."""
        if self.process is not None:
            self.process.finish()
        self.stop_metrics()
