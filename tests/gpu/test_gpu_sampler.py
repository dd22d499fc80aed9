"""The sampler, sources and history as plain Python, without a server."""

from __future__ import annotations

import time

import pytest
from fake_pynvml import FakeGpu, FakeNvml
from traitlets import TraitError

from jupyter_air.gpu.history import History
from jupyter_air.gpu.host import HostReading
from jupyter_air.gpu.nvml import NvmlSource
from jupyter_air.gpu.sampler import Sampler
from jupyter_air.gpu.simulated import SimulatedSource
from jupyter_air.gpu.sources import open_source
from jupyter_air.gpu.types import Reading
from jupyter_air.server.extension import JupyterAir


def test_history_keeps_timestamps_strictly_increasing():
    history = History(3)
    host = HostReading(1.0, 2, 3)
    stamps = [history.append(1000, Reading.empty(1), host).timestamp_ms for _ in range(5)]
    assert stamps == [1000, 1001, 1002, 1003, 1004]
    assert [s.timestamp_ms for s in history.since(None)] == [1002, 1003, 1004]
    assert [s.timestamp_ms for s in history.since(1002)] == [1003, 1004]
    assert history.latest().timestamp_ms == 1004


def test_every_snapshot_is_one_instant_even_while_sampling():
    # Given a sampler taking samples as fast as it can on another thread
    sampler = Sampler(
        lambda: open_source("simulated", 2), interval_seconds=0.0001, history_seconds=0.01, idle_timeout_seconds=60
    )
    sampler.start()
    try:
        # When snapshots are taken meanwhile, for half a second from its first sample (on a loaded machine the first
        # can take longer than that)
        first = time.monotonic() + 60
        while not sampler.snapshot().samples and time.monotonic() < first:
            time.sleep(0.01)
        snaps, deadline = [], time.monotonic() + 0.5
        while time.monotonic() < deadline:
            snaps.append(sampler.snapshot())
    finally:
        sampler.stop()
    # Then each one's newest sample is the one its processes and host totals come from
    full = [s for s in snaps if s.samples]
    assert len(full) > 100
    assert all(s.samples[-1] is s.latest for s in full)
    assert all(len(s.devices) == 2 and s.source == "simulated" for s in full)


def test_unknown_source_is_a_clear_error():
    with pytest.raises(ValueError, match="auto, nvml, simulated, none"):
        open_source("cuda")


def test_none_source_says_why():
    source = open_source("none")
    assert source.available is False and "gpu_source = 'none'" in source.reason


def test_simulated_numbers_vary_and_stay_plausible():
    # Given 3 simulated GPUs that no process of this user uses (any .distributed() caller here would hold one at 0 %)
    source = SimulatedSource(3, users=lambda: [])
    source.open()
    readings = [source.read() for _ in range(5)]
    assert source.name == "simulated" and len(source.devices) == 3
    values = {r.utilization_percent[0] for r in readings}
    assert len(values) > 1
    for r in readings:
        assert all(0 <= u <= 100 for u in r.utilization_percent)
        assert all(0 < m <= t for m, t in zip(r.memory_used_bytes, r.memory_total_bytes, strict=True))


def test_device_open_failure_keeps_the_slot(monkeypatch):
    # Given NVML whose second device cannot be opened
    nvml = FakeNvml([FakeGpu(), FakeGpu(lost_after=0)])
    monkeypatch.setitem(__import__("sys").modules, "pynvml", nvml)
    source = NvmlSource()
    source.open()
    # Then the device is listed with its error and reads as nulls
    assert source.devices[1].error and source.devices[1].name is None
    reading = source.read()
    assert reading.utilization_percent == [37.0, None] and reading.errors[1]


@pytest.mark.parametrize(
    "trait,value",
    [("sample_interval_seconds", 0), ("gpu_source", "cuda"), ("simulated_gpus", 0), ("idle_timeout_seconds", -1)],
)
def test_bad_configuration_is_refused_with_the_trait_name(trait, value):
    with pytest.raises(TraitError, match=f"JupyterAir.{trait}|'{trait}' trait of a JupyterAir"):
        JupyterAir(**{trait: value})
