"""The run's own metrics for its card: latest value and step, and a short series for a sparkline."""

from __future__ import annotations

from jupyter_air.run_card.state import Energy, MetricSeries
from jupyter_air.tracking.energy import ENERGY_METRIC, on_simulated_gpus

#: Metrics a card shows (the most recently logged first) and values its sparklines keep.
MAX_METRICS = 8
MAX_POINTS = 60
#: System metrics (CPU, memory, GPUs) belong to MLflow's System metrics tab and the GPU panel, not the card.
_SYSTEM_PREFIX = "system/"


def _evenly(values: list[float], count: int) -> list[float]:
    """At most ``count`` of ``values``, evenly spaced, the last one kept."""
    if len(values) <= count:
        return values
    stride = (len(values) - 1) / (count - 1)
    return [values[round(i * stride)] for i in range(count)]


class MetricReader:
    """Reads a run's metrics from the tracking store; call :meth:`read` every few seconds, from one thread.

    A metric seen for the first time brings its logged history (thinned to ``MAX_POINTS``); after that
    each read adds the latest value when it changed, so a read costs one query however long the run.
    """

    def __init__(self, client, run_id: str):
        self.client = client
        self.run_id = run_id
        self._series: dict[str, MetricSeries] = {}
        #: The run's GPU energy at the last read (logged when it ends), and whether its GPUs were simulated.
        self.energy: Energy | None = None

    def read(self) -> list[MetricSeries]:
        """The run's metrics now, most recently logged first (up to ``MAX_METRICS``)."""
        data = self.client.get_run(self.run_id).data
        total = next((m.value for m in data.metrics if m.key == ENERGY_METRIC), None)
        if total is not None:
            self.energy = Energy(total, on_simulated_gpus(data.tags))
        latest = [m for m in data.metrics if not m.key.startswith(_SYSTEM_PREFIX)]
        latest.sort(key=lambda m: (m.timestamp, m.key), reverse=True)
        shown = []
        for metric in latest[:MAX_METRICS]:
            series = self._series.get(metric.key)
            if series is None:
                series = self._series[metric.key] = self._first_sight(metric)
            elif (metric.step, metric.timestamp) != (series.step, series.timestamp_ms):
                series.value, series.step, series.timestamp_ms = metric.value, metric.step, metric.timestamp
                series.points = [*series.points, metric.value][-MAX_POINTS:]
            shown.append(series)
        return shown

    def _first_sight(self, latest) -> MetricSeries:
        history = self.client.get_metric_history(self.run_id, latest.key)
        values = [m.value for m in sorted(history, key=lambda m: (m.step, m.timestamp))] or [latest.value]
        return MetricSeries(latest.key, latest.value, latest.step, latest.timestamp, _evenly(values, MAX_POINTS))
