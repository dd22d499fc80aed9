"""The energy of a run's GPUs: NVML's total energy counter as a difference from the run's start, else the sampled
power integrated over time; and whether another process used those GPUs meanwhile (the counter is per board)."""

from __future__ import annotations

import os
import re
from collections.abc import Sequence

from jupyter_air.gpu.attribution import kernel_of
from jupyter_air.tracking.entities import Metric
from jupyter_air.tracking.naming import ENERGY_EXCLUSIVE_TAG, ENERGY_METHOD_TAG, GPU_SOURCE_TAG

#: Values of the tag ``air.energy_method``: NVML's counter (Volta and newer), or the integral of sampled power.
COUNTER, INTEGRAL = "nvml_energy_counter", "power_integral"
#: The run's GPU energy, summed over its GPUs (and over nodes, under ``system/``), in watt-hours.
TOTAL_METRIC = "total_energy_watt_hours"
ENERGY_METRIC = f"system/{TOTAL_METRIC}"


def on_simulated_gpus(tags: dict[str, str]) -> bool:
    """Whether a run's GPU figures (its energy among them) came from the simulated source, on any of its nodes."""
    return any(k.startswith(GPU_SOURCE_TAG) and v == "simulated" for k, v in tags.items())


_JOULES_PER_WATT_HOUR = 3600.0
_NODE_JOULES = re.compile(r"system/(?:node_\d+/)?gpu_\d+_energy_joules")
_NODE_TAG = re.compile(r"air\.energy_(method|exclusive)\.node_\d+")


def run_gpus(devices: Sequence, named: Sequence[str] | None = None) -> list[int]:
    """Indexes of the run's GPUs among ``devices``: those ``named`` as ``CUDA_VISIBLE_DEVICES`` names them (indexes
    or UUIDs), else those ``CUDA_VISIBLE_DEVICES`` names, else every device. A name not found means every device."""
    if named is None:
        visible = os.environ.get("CUDA_VISIBLE_DEVICES")
        if visible is None:
            return [d.index for d in devices]
        named = [n.strip() for n in visible.split(",") if n.strip()]
    found = []
    for name in named:
        match = next((d.index for d in devices if str(d.index) == name or (d.uuid and d.uuid.startswith(name))), None)
        if match is None:
            return [d.index for d in devices]
        found.append(match)
    return sorted(set(found))


class EnergyMeter:
    """Energy of ``gpus`` since the meter was made, in joules per GPU; :meth:`observe` every sample of the source."""

    def __init__(self, source, gpus: list[int]):
        self.gpus = gpus
        self._source = source
        counters = source.energy_millijoules()
        self._start = {i: counters[i] for i in gpus if i < len(counters) and counters[i] is not None}
        self.method = COUNTER if len(self._start) == len(gpus) else INTEGRAL
        self._joules = dict.fromkeys(gpus, 0.0)
        self._last_power: dict[int, tuple[float, float]] = {}  # GPU -> (monotonic seconds, watts)
        self._ours: dict[int, bool] = {}
        self.exclusive = True

    def observe(self, reading, at: float) -> None:
        """Take one reading of the source (taken at monotonic time ``at``): its power on the integral path, and
        whether a process outside this one's tree holds memory on one of the run's GPUs."""
        if self.method == INTEGRAL:
            for i in self.gpus:
                watts = reading.power_watts[i] if i < len(reading.power_watts) else None
                if watts is None:
                    continue
                last = self._last_power.get(i)
                if last is not None:
                    self._joules[i] += (at - last[0]) * (last[1] + watts) / 2
                self._last_power[i] = (at, watts)
        for proc in reading.processes:
            if proc.gpu_index in self.gpus and not self._is_ours(proc.pid):
                self.exclusive = False

    def joules(self) -> dict[int, float]:
        """Each GPU's energy so far (the counter is read now on the counter path)."""
        if self.method == COUNTER:
            counters = self._source.energy_millijoules()
            for i, start in self._start.items():
                now = counters[i] if i < len(counters) else None
                if now is not None and now >= start:  # a counter that went back (driver reloaded) keeps its last value
                    self._joules[i] = (now - start) / 1000.0
        return dict(self._joules)

    def _is_ours(self, pid: int) -> bool:
        if pid not in self._ours:
            self._ours[pid] = kernel_of(pid, {os.getpid(): "run"}) is not None
        return self._ours[pid]


def watt_hours(joules: float) -> float:
    return joules / _JOULES_PER_WATT_HOUR


def sum_nodes(client, run_id: str) -> None:
    """For a run whose nodes logged their energy (``system/node_<n>/gpu_<i>_energy_joules``): log the sum over
    nodes as ``system/total_energy_watt_hours``, and the run's ``air.energy_method`` (``mixed`` when the nodes
    differ) and ``air.energy_exclusive`` (false when any node's was)."""
    data = client.get_run(run_id).data
    latest = {m.key: m for m in data.metrics}
    if ENERGY_METRIC in latest:
        return
    joules = [m for key, m in latest.items() if _NODE_JOULES.fullmatch(key)]
    if not joules:
        return
    total = watt_hours(sum(m.value for m in joules))
    timestamp = max(m.timestamp for m in joules)
    tags = {}
    methods = {v for k, v in data.tags.items() if _NODE_TAG.fullmatch(k) and k.startswith(ENERGY_METHOD_TAG)}
    if methods:
        tags[ENERGY_METHOD_TAG] = methods.pop() if len(methods) == 1 else "mixed"
    exclusive = [v for k, v in data.tags.items() if _NODE_TAG.fullmatch(k) and k.startswith(ENERGY_EXCLUSIVE_TAG)]
    if exclusive:
        tags[ENERGY_EXCLUSIVE_TAG] = "false" if "false" in exclusive else "true"
    client.log_batch(run_id, metrics=[Metric(ENERGY_METRIC, total, timestamp, 0)], tags=tags)
