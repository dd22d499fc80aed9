"""One system-metrics sampler per node per run, logged under MLflow's own ``system/...`` names."""

from __future__ import annotations

import logging
import os
import threading
import time
from collections import defaultdict

log = logging.getLogger(__name__)

#: Seconds ``stop()`` waits for the sampling thread before logging the final sample anyway.
_JOIN_TIMEOUT_SECONDS = 10.0


class HostMetrics:
    """CPU, memory, disk and network samples, computed and named as MLflow's CPU, disk and network monitors do
    (without importing MLflow)."""

    def __init__(self):
        import psutil

        self._psutil = psutil
        self._samples: dict[str, list[float]] = defaultdict(list)
        network = psutil.net_io_counters()
        self._network_start = (network.bytes_recv / 1e6, network.bytes_sent / 1e6)
        self._network: dict[str, float] = {}

    def collect_metrics(self) -> None:
        psutil = self._psutil
        memory = psutil.virtual_memory()
        disk = psutil.disk_usage(os.sep)
        for name, value in (
            ("cpu_utilization_percentage", psutil.cpu_percent()),
            ("system_memory_usage_megabytes", memory.used / 1e6),
            ("system_memory_usage_percentage", memory.used / memory.total * 100),
            ("disk_usage_percentage", disk.percent),
            ("disk_usage_megabytes", disk.used / 1e6),
            ("disk_available_megabytes", disk.free / 1e6),
        ):
            self._samples[name].append(value)
        network = psutil.net_io_counters()
        self._network = {  # totals since sampling began: not averaged
            "network_receive_megabytes": network.bytes_recv / 1e6 - self._network_start[0],
            "network_transmit_megabytes": network.bytes_sent / 1e6 - self._network_start[1],
        }

    def aggregate_metrics(self) -> dict[str, float]:
        return {k: round(sum(v) / len(v), 1) for k, v in self._samples.items() if v} | self._network

    def clear_metrics(self) -> None:
        self._samples.clear()
        self._network = {}


class GpuMetrics:
    """Per-GPU samples from jupyter_air's NVML source, named like MLflow's GPU monitor plus temperature."""

    def __init__(self, source):
        self._source = source
        self._samples: dict[str, list[float]] = defaultdict(list)

    def collect_metrics(self) -> None:
        reading = self._source.read()
        columns = {
            "utilization_percentage": reading.utilization_percent,
            "temperature_celsius": reading.temperature_celsius,
            "power_usage_watts": reading.power_watts,
        }
        for name, values in columns.items():
            for index, value in enumerate(values or []):
                if value is not None:
                    self._samples[f"gpu_{index}_{name}"].append(float(value))
        used, total = reading.memory_used_bytes or [], reading.memory_total_bytes or []
        for index, (used_bytes, total_bytes) in enumerate(zip(used, total, strict=False)):
            if used_bytes is None:
                continue
            self._samples[f"gpu_{index}_memory_usage_megabytes"].append(used_bytes / 1e6)
            if total_bytes:
                self._samples[f"gpu_{index}_memory_usage_percentage"].append(used_bytes / total_bytes * 100)

    def aggregate_metrics(self) -> dict[str, float]:
        return {k: round(sum(v) / len(v), 1) for k, v in self._samples.items() if v}

    def clear_metrics(self) -> None:
        self._samples.clear()


def _open_gpu_source():
    """The configured GPU source (the same as the GPU panel's), or None when this node has no usable GPU."""
    from jupyter_air.gpu.sources import open_source

    source = open_source()
    if source.available:
        return source
    log.info("No GPU metrics for this run: %s", source.reason)
    source.close()
    return None


class SystemMetrics:
    """Samples CPU, memory, disk, network and GPU metrics and logs them to one MLflow run.

    Unlike MLflow's ``SystemMetricsMonitor`` it keeps sampling whatever the run's status (a worker
    may end the run while the launcher still owns it) and ``stop()`` always logs a final sample,
    so a call shorter than one interval still records one. Metric names are MLflow's
    (``system/cpu_utilization_percentage``, ``system/gpu_0_utilization_percentage``, ...), with
    ``system/gpu_<i>_temperature_celsius`` added; ``node_id`` inserts ``system/<node_id>/``. ``tracking_uri``:
    the run's store when it is not this process's (a node of a multi-node call); ``tracking``: how to reach it,
    when the caller has a way already (:func:`~jupyter_air.tracking.store.tracker`).
    """

    def __init__(
        self,
        run_id: str,
        interval_seconds: float = 10.0,
        node_id: str | None = None,
        gpu_source=None,
        tracking_uri: str | None = None,
        tracking=None,
    ):
        if interval_seconds <= 0:
            raise ValueError(f"interval_seconds must be positive, got {interval_seconds!r}")
        self.run_id = run_id
        self.interval_seconds = interval_seconds
        self.node_id = node_id
        self.prefix = f"system/{node_id}/" if node_id else "system/"
        self.tracking_uri = tracking_uri
        self._gpu_source = gpu_source
        self._owns_source = gpu_source is None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._step = 0
        self._monitors: list = []
        self._client = tracking

    def __enter__(self) -> SystemMetrics:
        self.start()
        return self

    def __exit__(self, *exc_info) -> None:
        self.stop()

    def start(self) -> None:
        """Begin sampling in a daemon thread; the first sample is logged after one interval."""
        if self._thread is not None:
            return
        from jupyter_air.tracking.store import tracker

        self._client = self._client or tracker(self.tracking_uri)
        self._monitors = [HostMetrics()]
        if self._owns_source:
            self._gpu_source = _open_gpu_source()
        if self._gpu_source is not None:
            self._monitors.append(GpuMetrics(self._gpu_source))
            # Label where GPU figures came from: simulated ones must never pass for real hardware. Each node of a
            # multi-node run has its own tag (nodes writing one tag at once would race in a SQLite store).
            tag = f"air.gpu_source.{self.node_id}" if self.node_id else "air.gpu_source"
            self._client.set_tag(self.run_id, tag, self._gpu_source.name)
        self._collect()  # primes psutil's CPU counter so the first logged value covers the interval
        for monitor in self._monitors:
            monitor.clear_metrics()
        self._thread = threading.Thread(target=self._loop, name=f"air-system-metrics-{self.run_id}", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop sampling and log one final sample covering the time since the last one."""
        if self._thread is None:
            return
        self._stop.set()
        self._thread.join(_JOIN_TIMEOUT_SECONDS)
        self._thread = None
        self._sample_and_log()
        if self._owns_source and self._gpu_source is not None:
            self._gpu_source.close()

    def _loop(self) -> None:
        while not self._stop.wait(self.interval_seconds):
            self._sample_and_log()

    def _collect(self) -> None:
        for monitor in self._monitors:
            try:
                monitor.collect_metrics()
            except Exception as exc:  # noqa: BLE001 - a failing sensor must not end the run's sampling
                log.warning("System metrics: %s failed: %s", type(monitor).__name__, exc)

    def _sample_and_log(self) -> None:
        from jupyter_air.tracking.entities import Metric

        with self._lock:
            self._collect()
            values: dict[str, float] = {}
            for monitor in self._monitors:
                values.update(monitor.aggregate_metrics())
                monitor.clear_metrics()
            timestamp_ms = int(time.time() * 1000)
            metrics = [Metric(self.prefix + k, v, timestamp_ms, self._step) for k, v in values.items()]
            self._step += 1
        if not metrics:
            return
        try:
            self._client.log_batch(self.run_id, metrics=metrics)
        except Exception as exc:  # noqa: BLE001 - the store may be briefly locked; sampling goes on
            log.warning("System metrics for run %s not logged: %s", self.run_id, exc)
