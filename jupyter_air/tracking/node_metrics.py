"""System metrics of one node of a multi-node run, for the per-node actors that run its work (a call's, a
workload's): the driver asks each node to sample into the run, then to stop."""

from __future__ import annotations

from jupyter_air.tracking.system_metrics import SystemMetrics


class NodeMetrics:
    """Mixed into a :class:`~jupyter_air.cluster.agent.NodeAgent` that runs a run's work on its node (``index``)."""

    _metrics: SystemMetrics | None = None
    index: int

    def sample_metrics(self, run_id: str, tracking_uri: str, interval_seconds: float, gpu_source: dict | None) -> None:
        """Sample this node's system metrics into the run as ``system/node_<n>/...`` until :meth:`stop_metrics`;
        ``gpu_source`` (``{"kind", "count"}``) is the driver's, so a node shows the GPUs the driver's panel shows
        (None: this node's own)."""
        self.stop_metrics()
        node = f"node_{self.index}"
        self._metrics = SystemMetrics(
            run_id, interval_seconds, node_id=node, tracking_uri=tracking_uri, gpu_choice=gpu_source
        )
        self._metrics.start()

    def stop_metrics(self) -> None:
        """Take the last sample and stop sampling."""
        if self._metrics is not None:
            metrics, self._metrics = self._metrics, None
            metrics.stop()
