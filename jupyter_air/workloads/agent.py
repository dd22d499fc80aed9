"""The actor of one node of a workload attempt on a Ray cluster: runs the command there as a NodeProcess."""

from __future__ import annotations

import os
import socket

from jupyter_air.cluster.agent import NodeAgent, read_from
from jupyter_air.workloads.logs import OUTPUT, TIMESTAMPS
from jupyter_air.workloads.node import NodeProcess

#: Seconds between two looks at the command while a driver waits for it to end.
_WAIT_STEP_SECONDS = 1.0


class WorkloadAgent(NodeAgent):
    """One node of one attempt: the command with its log pump, written to this node's disk and read back."""

    def __init__(self, index: int):
        super().__init__(index)
        self.process: NodeProcess | None = None
        self._metrics = None

    def free_port(self, host: str) -> int:
        """A port free on ``host`` now, for MASTER_PORT (the command binds it itself a moment later)."""
        with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as probe:
            probe.bind((host, 0))
            return probe.getsockname()[1]

    def start(self, command: str, cwd: str, overrides: dict[str, str], marker: dict[str, str], umask: int | None):
        """Start the command in this node's environment plus ``overrides`` (Ray set CUDA_VISIBLE_DEVICES)."""
        if not os.path.isdir(cwd):
            raise FileNotFoundError(
                f"code_source.root_path {cwd} does not exist on node {self.index} ({socket.gethostname()}): put the "
                "code on a file system every node mounts at the same path, or in the nodes' image"
            )
        self.process = NodeProcess(command, cwd, {**os.environ, **overrides}, self.folder / "output", marker, umask)
        self.process.start()

    def sample_metrics(self, run_id: str, tracking_uri: str, interval_seconds: float) -> None:
        """Sample this node's system metrics into the attempt's run as ``system/node_<n>/...``."""
        from jupyter_air.tracking.system_metrics import SystemMetrics

        self._metrics = SystemMetrics(run_id, interval_seconds, node_id=f"node_{self.index}", tracking_uri=tracking_uri)
        self._metrics.start()

    def poll(self, offsets: dict[str, int]) -> dict:
        """New bytes of the output and its timestamps after ``offsets``; the exit status once the command ended."""
        folder = self.process.log_dir
        chunks = {name: read_from(folder / name, offsets.get(name, 0)) for name in (OUTPUT, TIMESTAMPS)}
        return {"chunks": chunks, "exit_code": self.process.poll(), "problem": self.process.problem}

    def wait(self) -> int:
        """Return the exit status once the command ended: the pending answer by which a driver learns of a lost node."""
        while (code := self.process.wait(_WAIT_STEP_SECONDS)) is None:
            pass
        return code

    def stop(self, grace_seconds: float) -> int | None:
        """Stop every process of the command (SIGTERM, SIGKILL after ``grace_seconds``); its exit status."""
        return self.process.stop(grace_seconds) if self.process is not None else None

    def finish(self) -> None:
        """Stop what the command left, let the pump write the rest, take the last metrics sample."""
        if self.process is not None:
            self.process.finish()
        if self._metrics is not None:
            metrics, self._metrics = self._metrics, None
            metrics.stop()
