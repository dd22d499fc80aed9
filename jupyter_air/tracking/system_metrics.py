"""One system-metrics sampler per node per run, logged under MLflow's own ``system/...`` names."""

from __future__ import annotations

import logging
import os
import threading
import time
from collections import defaultdict
from collections.abc import Sequence

from jupyter_air.gpu.sources import SOURCE_ENV, open_source, simulated_gpus, source_kind
from jupyter_air.tracking.energy import TOTAL_METRIC, EnergyMeter, run_gpus, watt_hours
from jupyter_air.tracking.entities import Metric
from jupyter_air.tracking.naming import ENERGY_EXCLUSIVE_TAG, ENERGY_METHOD_TAG, GPU_SOURCE_TAG
from jupyter_air.tracking.sample_times import sample_delays
from jupyter_air.tracking.store import tracker

log = logging.getLogger(__name__)

#: Seconds ``stop()`` waits for the sampling thread before logging the final sample anyway.
_JOIN_TIMEOUT_SECONDS = 10.0
#: Seconds a CPU sample waits when no clock tick passed since the last one (a call stopped just after it started).
_CPU_TICK_SECONDS = 0.02


def busy_percent(before, after) -> float | None:
    """Percent of CPU time spent busy between two ``psutil.cpu_times()`` (idle and I/O wait are not busy; guest
    time is already in user time); None when no time was counted in between."""
    delta = {name: max(getattr(after, name) - getattr(before, name), 0.0) for name in after._fields}
    total = sum(delta.values()) - delta.get("guest", 0.0) - delta.get("guest_nice", 0.0)
    if total <= 0:
        return None
    idle = delta.get("idle", 0.0) + delta.get("iowait", 0.0)
    return round(100.0 * (total - idle) / total, 1)


class HostMetrics:
    """CPU, memory, disk and network samples, computed and named as MLflow's CPU, disk and network monitors do
    (without importing MLflow).

    CPU utilization covers the span since the last sample: MLflow's monitor asks ``psutil.cpu_percent()``, whose
    baseline is per thread, so a sample taken by another thread than the last (the sampling thread's first,
    ``stop()``'s last) covers no time and reads 0. Here the baseline is this object's, whichever thread samples.
    """

    def __init__(self):
        import psutil

        self._psutil = psutil
        self._samples: dict[str, list[float]] = defaultdict(list)
        network = psutil.net_io_counters()
        self._network_start = (network.bytes_recv / 1e6, network.bytes_sent / 1e6)
        self._network: dict[str, float] = {}
        self._cpu = psutil.cpu_times()
        self._primed = False

    def collect_metrics(self) -> None:
        psutil = self._psutil
        if self._primed:  # the first collect (priming the others) leaves the CPU baseline where sampling began
            now = psutil.cpu_times()
            busy = busy_percent(self._cpu, now)
            if busy is None:  # no clock tick since the last sample
                time.sleep(_CPU_TICK_SECONDS)
                busy = busy_percent(self._cpu, now := psutil.cpu_times())
            if busy is not None:
                self._samples["cpu_utilization_percentage"].append(busy)
                self._cpu = now
        self._primed = True
        memory = psutil.virtual_memory()
        disk = psutil.disk_usage(os.sep)
        for name, value in (
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
    """Per-GPU samples from jupyter_air's NVML source, named like MLflow's GPU monitor plus temperature, and the
    run's GPUs' cumulative energy (``gpu_<i>_energy_joules``, see :mod:`~jupyter_air.tracking.energy`)."""

    def __init__(self, source, gpus: Sequence[str] | None = None):
        self._source = source
        self._samples: dict[str, list[float]] = defaultdict(list)
        self.energy = EnergyMeter(source, run_gpus(source.devices, gpus))

    def collect_metrics(self) -> None:
        reading = self._source.read()
        self.energy.observe(reading, time.monotonic())
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
        averages = {k: round(sum(v) / len(v), 1) for k, v in self._samples.items() if v}
        return averages | {f"gpu_{i}_energy_joules": round(j, 3) for i, j in self.energy.joules().items()}

    def clear_metrics(self) -> None:
        self._samples.clear()


def gpu_choice() -> dict | None:
    """The GPU source this process was told to use (``JUPYTER_AIR_GPU_SOURCE``: the Jupyter server exports its own to
    its kernels and terminals) and its simulated GPU count, for the nodes of a multi-node call or attempt to sample
    the GPUs the server's panel shows; None when it was told none, so each node uses its own."""
    if not os.environ.get(SOURCE_ENV, "").strip():
        return None
    return {"kind": source_kind(), "count": simulated_gpus()}


def _open_gpu_source(choice: dict | None):
    """The GPU source ``choice`` names, else the configured one (the same as the GPU panel's); None when this node
    has no usable GPU."""
    source = open_source(**choice) if choice else open_source()
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
    when the caller has a way already (:func:`~jupyter_air.tracking.store.tracker`); ``gpu_choice``: the GPU
    source to open (:func:`gpu_choice` of the driver) instead of this process's. ``gpus``: the run's GPUs as
    ``CUDA_VISIBLE_DEVICES`` names them, whose energy is logged (default: ``CUDA_VISIBLE_DEVICES``, else all);
    the last sample adds ``total_energy_watt_hours`` and the tags ``air.energy_method`` and
    ``air.energy_exclusive`` (with ``.<node_id>`` on a node of a multi-node run).
    """

    def __init__(
        self,
        run_id: str,
        interval_seconds: float = 10.0,
        node_id: str | None = None,
        gpu_source=None,
        tracking_uri: str | None = None,
        tracking=None,
        gpu_choice: dict | None = None,
        gpus: Sequence[str] | None = None,
    ):
        if interval_seconds <= 0:
            raise ValueError(f"interval_seconds must be positive, got {interval_seconds!r}")
        self.run_id = run_id
        self.interval_seconds = interval_seconds
        self.node_id = node_id
        self.prefix = f"system/{node_id}/" if node_id else "system/"
        self.tracking_uri = tracking_uri
        self._gpu_source = gpu_source
        self._gpu_choice = gpu_choice
        self._owns_source = gpu_source is None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._step = 0
        self._monitors: list = []
        self._client = tracking
        self._gpus = gpus
        self._energy = None

    def __enter__(self) -> SystemMetrics:
        self.start()
        return self

    def __exit__(self, *exc_info) -> None:
        self.stop()

    def start(self) -> None:
        """Begin sampling in a daemon thread: every second at first, then every interval (:mod:`.sample_times`)."""
        if self._thread is not None:
            return

        self._client = self._client or tracker(self.tracking_uri)
        self._monitors = [HostMetrics()]
        if self._owns_source:
            self._gpu_source = _open_gpu_source(self._gpu_choice)
        if self._gpu_source is not None:
            monitor = GpuMetrics(self._gpu_source, self._gpus)
            self._monitors.append(monitor)
            self._energy = monitor.energy
            # Label where GPU figures came from: simulated ones must never pass for real hardware. Each node of a
            # multi-node run has its own tags (nodes writing one tag at once would race in a SQLite store).
            self._client.log_batch(
                self.run_id, tags={self._tag(GPU_SOURCE_TAG): self._gpu_source.name, **self._energy_tags()}
            )
        self._collect()  # the first logged values then cover the interval, not the time since the monitors were made
        for monitor in self._monitors:
            monitor.clear_metrics()
        self._thread = threading.Thread(target=self._loop, name=f"air-system-metrics-{self.run_id}", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop sampling and log one final sample covering the time since the last one (a sampler still
        starting in another thread then never samples)."""
        self._stop.set()
        if self._thread is None:
            return
        self._thread.join(_JOIN_TIMEOUT_SECONDS)
        self._thread = None
        self._sample_and_log(final=True)
        if self._owns_source and self._gpu_source is not None:
            self._gpu_source.close()

    def _tag(self, name: str) -> str:
        return f"{name}.{self.node_id}" if self.node_id else name

    def _energy_tags(self, final: bool = False) -> dict[str, str]:
        if self._energy is None or not self._energy.gpus:
            return {}
        tags = {self._tag(ENERGY_METHOD_TAG): self._energy.method}
        if final:
            tags[self._tag(ENERGY_EXCLUSIVE_TAG)] = str(self._energy.exclusive).lower()
        return tags

    def _loop(self) -> None:
        for delay in sample_delays(self.interval_seconds):
            if self._stop.wait(delay):
                return
            self._sample_and_log()

    def _collect(self) -> None:
        for monitor in self._monitors:
            try:
                monitor.collect_metrics()
            except Exception as exc:  # noqa: BLE001 - a failing sensor must not end the run's sampling
                log.warning("System metrics: %s failed: %s", type(monitor).__name__, exc)

    def _sample_and_log(self, final: bool = False) -> None:
        with self._lock:
            self._collect()
            values: dict[str, float] = {}
            for monitor in self._monitors:
                values.update(monitor.aggregate_metrics())
                monitor.clear_metrics()
            tags = self._energy_tags(final) if final else {}
            if tags:
                joules = [v for k, v in values.items() if k.endswith("_energy_joules")]
                values[TOTAL_METRIC] = round(watt_hours(sum(joules)), 6)
            timestamp_ms = int(time.time() * 1000)
            metrics = [Metric(self.prefix + k, v, timestamp_ms, self._step) for k, v in values.items()]
            self._step += 1
        if not metrics:
            return
        try:
            self._client.log_batch(self.run_id, metrics=metrics, tags=tags)
        except Exception as exc:  # noqa: BLE001 - the store may be briefly locked; sampling goes on
            log.warning("System metrics for run %s not logged: %s", self.run_id, exc)
