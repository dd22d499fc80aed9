"""System metrics of one node of a multi-node run, for the per-node actors that run its work (a call's, a
workload's): the driver asks each node to sample into the run, then to stop."""

from __future__ import annotations

import logging
import threading

from jupyter_air.tracking.system_metrics import SystemMetrics

log = logging.getLogger(__name__)

#: Seconds :meth:`NodeMetrics.stop_metrics` waits for a sampler still opening the run's store (on a 2-core machine
#: running four test suites, a node had not opened it 15 s after its call ended): well inside the 120 s the driver
#: waits for a node that is late but answers pings (:mod:`~jupyter_air.cluster.node_run`).
_OPEN_WAIT_SECONDS = 60.0


class NodeMetrics:
    """Mixed into a :class:`~jupyter_air.cluster.agent.NodeAgent` that runs a run's work on its node (``index``)."""

    _metrics: SystemMetrics | None = None
    _opening: threading.Thread | None = None
    index: int

    def sample_metrics(self, run_id: str, tracking_uri: str, interval_seconds: float, gpu_source: dict | None) -> None:
        """Sample this node's system metrics into the run as ``system/node_<n>/...`` until :meth:`stop_metrics`;
        ``gpu_source`` (``{"kind", "count"}``) is the driver's, so a node shows the GPUs the driver's panel shows
        (None: this node's own). Answers at once: the sampler opens the run's store in a thread (importing MLflow
        can take longer on a busy node than the driver waits for an answer)."""
        self.stop_metrics()
        node = f"node_{self.index}"
        metrics = SystemMetrics(
            run_id, interval_seconds, node_id=node, tracking_uri=tracking_uri, gpu_choice=gpu_source
        )
        self._metrics = metrics
        self._opening = threading.Thread(target=_start, args=(metrics, node), name=f"air-open-{node}", daemon=True)
        self._opening.start()

    def stop_metrics(self) -> None:
        """Take the last sample and stop sampling (a sampler that could not open the store in time logs nothing)."""
        opening, self._opening = self._opening, None
        if opening is not None:
            opening.join(_OPEN_WAIT_SECONDS)
        if self._metrics is not None:
            metrics, self._metrics = self._metrics, None
            metrics.stop()


def _start(metrics: SystemMetrics, node: str) -> None:
    try:
        metrics.start()
    except Exception as exc:  # noqa: BLE001 - a node's metrics must not end its ranks' work
        log.warning("System metrics of %s not sampled into run %s: %s", node, metrics.run_id, exc)
