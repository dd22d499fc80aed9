"""The GPU REST API through a real Jupyter server, with NVML faked underneath the real NVML code path."""

from __future__ import annotations

import json
import logging
import os
import time

import pytest
from fake_pynvml import FakeGpu
from tornado.httpclient import HTTPClientError
from waiting import eventually

GPU_SERIES = {"utilization_percent", "memory_used_bytes", "temperature_celsius", "power_watts"}


async def test_payload_contract_and_units(gpu):
    # Given a server sampling two fake GPUs
    # When the panel asks for the history
    payload = await gpu()
    # Then the columnar payload has every documented field, in the documented units
    assert payload["available"] is True and payload["reason"] is None
    assert payload["source"] == "nvml" and payload["sampling"] is True
    assert payload["interval_seconds"] == 0.05 and payload["idle_timeout_seconds"] == 60
    assert payload["history_seconds"] == 7200
    assert [d["index"] for d in payload["devices"]] == [0, 1]
    assert payload["devices"][0] == {
        "index": 0,
        "uuid": "GPU-fake-0",
        "name": "NVIDIA H100 80GB HBM3",
        "memory_total_bytes": 80 << 30,
        "error": None,
    }
    samples = len(payload["timestamps_ms"])
    assert samples >= 1
    assert set(payload["gpus"]) == GPU_SERIES
    for series in payload["gpus"].values():
        assert len(series) == 2 and all(len(per_gpu) == samples for per_gpu in series)
    assert payload["gpus"]["utilization_percent"][1][-1] == 90
    assert payload["gpus"]["memory_used_bytes"][0][-1] == 1 << 30
    assert payload["gpus"]["temperature_celsius"][1][-1] == 71
    assert payload["gpus"]["power_watts"][0][-1] == 210.5
    assert abs(payload["timestamps_ms"][-1] - time.time() * 1000) < 60_000
    host = payload["host"]
    assert len(host["cpu_percent"]) == samples and len(host["memory_used_bytes"]) == samples
    assert host["memory_total_bytes"] > host["memory_used_bytes"][-1] > 0
    assert payload["processes"] == []


async def test_since_returns_only_newer_samples(gpu, jp_serverapp):
    # Given some history
    first = await gpu()
    newest = first["timestamps_ms"][-1]
    # When the panel polls with since=<newest>, after more samples were taken
    await eventually(lambda: len(_sampler(jp_serverapp)) > len(first["timestamps_ms"]))
    seen = (await gpu(since=newest))["timestamps_ms"]
    assert seen
    # Then it gets only samples after <newest>, with series of matching length
    assert all(ts > newest for ts in seen)
    full = await gpu()
    assert full["timestamps_ms"][: len(first["timestamps_ms"])] == first["timestamps_ms"]
    # And a since in the future gives empty series but the same metadata
    future = await gpu(since=int(time.time() * 1000) + 3_600_000)
    assert future["timestamps_ms"] == [] and future["gpus"]["utilization_percent"] == [[], []]
    assert future["devices"] == full["devices"]


@pytest.mark.parametrize(
    "air_config", [{"sample_interval_seconds": 0.02, "history_seconds": 0.2, "gpu_source": "nvml"}]
)
async def test_ring_buffer_is_bounded_at_capacity(gpu, fake_nvml):
    # Given capacity = 0.2 s / 0.02 s = 10 samples
    await gpu()
    # When the sampler runs for many more ticks than that
    await eventually(lambda: fake_nvml.calls["nvmlDeviceGetUtilizationRates"] >= 2 * 40)
    payload = await gpu()
    # Then only the newest 10 are kept, in order
    stamps = payload["timestamps_ms"]
    assert len(stamps) == 10
    assert stamps == sorted(stamps) and len(set(stamps)) == 10
    assert all(len(s) == 10 for s in payload["gpus"]["utilization_percent"])


@pytest.mark.parametrize(
    "air_config", [{"sample_interval_seconds": 0.05, "idle_timeout_seconds": 0.3, "gpu_source": "nvml"}]
)
async def test_idle_stop_makes_no_nvml_calls_then_resumes(gpu, fake_nvml, jp_serverapp):
    # Given a sampler nobody asks for 0.3 s
    await gpu()
    sampler = _sampler(jp_serverapp)
    await eventually(lambda: not sampler.sampling)
    # When time passes with no request
    calls = fake_nvml.total_calls()
    before = len(sampler)
    await _sleep(0.5)
    # Then NVML is not called at all
    assert fake_nvml.total_calls() == calls
    assert len(sampler) == before
    # When the panel asks again
    payload = await gpu()
    # Then sampling resumed and the answer already holds a fresh sample
    assert payload["sampling"] is True
    assert len(payload["timestamps_ms"]) == before + 1
    assert fake_nvml.total_calls() > calls
    await eventually(lambda: len(sampler) >= before + 3)


async def test_refresh_takes_a_sample_now(gpu, jp_serverapp, fake_nvml):
    # Given a sampler that is slow to tick (interval 60 s)
    sampler = _sampler(jp_serverapp)
    sampler.interval_seconds = 60
    first = await gpu()
    count = len(first["timestamps_ms"])
    # When Refresh is pressed
    fake_nvml.gpus[0].utilization_percent = 12
    refreshed = await gpu(refresh=True)
    # Then the answer has one more sample with the new value
    assert len(refreshed["timestamps_ms"]) >= count + 1
    assert refreshed["gpus"]["utilization_percent"][0][-1] == 12


async def test_refresh_with_since_answers_only_new_samples(gpu):
    first = await gpu()
    refreshed = await gpu(since=first["timestamps_ms"][-1], refresh=True)
    assert len(refreshed["timestamps_ms"]) >= 1
    assert refreshed["timestamps_ms"][0] > first["timestamps_ms"][-1]


@pytest.mark.parametrize("since", ["abc", "1.5", "-3", "%s%d"])
async def test_malformed_since_is_a_400_with_a_message_and_no_traceback(jp_fetch, since, caplog):
    caplog.set_level(logging.DEBUG)
    with pytest.raises(HTTPClientError) as err:
        await jp_fetch("jupyter-air", "gpu", params={"since": since})
    assert err.value.code == 400
    message = json.loads(err.value.response.body)["message"]
    assert "'since' must be a non-negative integer epoch time in milliseconds" in message and repr(since) in message
    assert [r.getMessage() for r in caplog.records if r.exc_info or r.levelno >= logging.ERROR] == []


async def test_version_route(jp_fetch):
    import jupyter_air

    response = await jp_fetch("jupyter-air", "version")
    assert json.loads(response.body) == {"version": jupyter_air.__version__}


@pytest.mark.parametrize("path,method", [(("gpu",), "GET"), (("gpu", "refresh"), "POST"), (("version",), "GET")])
async def test_unauthenticated_requests_are_refused(http_server_client, jp_base_url, path, method):
    # Given no token and no XSRF cookie
    url = jp_base_url + "jupyter-air/" + "/".join(path)
    # When the route is called anyway
    with pytest.raises(HTTPClientError) as err:
        await http_server_client.fetch(url, method=method, body=b"" if method == "POST" else None)
    # Then it is refused
    assert err.value.code in (401, 403)


@pytest.mark.parametrize(
    "nvml_init_error,words",
    [
        ("LibraryNotFound", "driver library"),
        ("DriverNotLoaded", "not loaded"),
        ("NoPermission", "permission"),
    ],
)
async def test_nvml_that_cannot_start_gives_a_reason(gpu, nvml_init_error, words):
    payload = await gpu()
    assert payload["available"] is False
    assert words in payload["reason"]
    assert payload["devices"] == [] and payload["gpus"]["utilization_percent"] == []
    assert len(payload["host"]["cpu_percent"]) >= 1 and payload["host"]["memory_total_bytes"] > 0


@pytest.mark.parametrize("nvml_init_error", ["ImportError"])
async def test_missing_nvml_package_gives_a_reason(gpu):
    payload = await gpu()
    assert payload["available"] is False and "pip install nvidia-ml-py" in payload["reason"]


@pytest.mark.parametrize("fake_gpus", [[FakeGpu(), FakeGpu(temperature_celsius="NotSupported")]])
async def test_unsupported_metric_is_null_not_an_error(gpu):
    payload = await gpu()
    assert payload["gpus"]["temperature_celsius"][0][-1] == 54
    assert payload["gpus"]["temperature_celsius"][1][-1] is None
    assert payload["gpus"]["utilization_percent"][1][-1] == 37
    assert [d["error"] for d in payload["devices"]] == [None, None]


@pytest.mark.parametrize("fake_gpus", [[FakeGpu(lost_after=3), FakeGpu(utilization_percent=90)]])
async def test_lost_gpu_keeps_its_slot_and_others_keep_sampling(gpu, fake_nvml, caplog):
    caplog.set_level(logging.WARNING)
    await eventually(lambda: fake_nvml.gpus[1].reads >= 10)
    payload = await gpu()
    util = payload["gpus"]["utilization_percent"]
    assert util[0][-1] is None and util[1][-1] == 90
    assert payload["gpus"]["memory_used_bytes"][0][-1] is None
    assert "GpuIsLost" in payload["devices"][0]["error"] and payload["devices"][1]["error"] is None
    assert payload["available"] is True
    lost_logs = [r for r in caplog.records if "GpuIsLost" in r.getMessage()]
    assert len(lost_logs) == 1


async def test_slow_nvml_never_blocks_the_server(gpu, fake_nvml, jp_fetch):
    # Given history, then an NVML call that hangs inside the sampler thread
    await gpu()
    fake_nvml.gate.clear()
    try:
        await eventually(lambda: fake_nvml.calls["nvmlDeviceGetUtilizationRates"] > 0 and not fake_nvml.gate.is_set())
        # When clients poll while NVML is stuck
        payload = await gpu()
        version = await jp_fetch("jupyter-air", "version")
        # Then they are answered from the history
        assert version.code == 200 and payload["available"] is True
    finally:
        fake_nvml.gate.set()


@pytest.mark.parametrize("gpu_source_env", ["simulated"])
async def test_environment_variable_selects_the_labelled_simulated_source(gpu):
    # Given JUPYTER_AIR_GPU_SOURCE=simulated while the config says nvml
    payload = await gpu()
    assert payload["source"] == "simulated" and payload["available"] is True
    assert len(payload["devices"]) == 2
    assert all("Simulated" in d["name"] for d in payload["devices"])


async def test_a_source_failing_on_every_read_is_unavailable_not_an_error(gpu, fake_nvml, jp_serverapp, caplog):
    # Given a working server, then a GPU binding that raises on every read, for many sampling intervals
    caplog.set_level(logging.INFO)
    await gpu()
    fake_nvml.read_error = RuntimeError("binding crashed")
    calls = fake_nvml.calls["nvmlDeviceGetUtilizationRates"]
    await eventually(lambda: fake_nvml.calls["nvmlDeviceGetUtilizationRates"] >= calls + 20)

    # When the panel asks
    payload = await gpu()

    # Then it gets 200 with the GPUs unavailable and why, the host still sampled
    assert payload["available"] is False
    assert "RuntimeError: binding crashed" in payload["reason"] and "Refresh" in payload["reason"]
    assert payload["gpus"]["utilization_percent"][0][-1] is None and payload["host"]["cpu_percent"][-1] is not None
    # And the traceback was logged once, then a count, not once per interval
    tracebacks = [r for r in caplog.records if r.exc_info and r.name.startswith("jupyter_air")]
    assert len(tracebacks) == 1
    assert any("failed 10 reads in a row" in r.getMessage() for r in caplog.records)

    # When the binding works again, Then so do the answers
    fake_nvml.read_error = None
    await eventually(lambda: _sampler(jp_serverapp).snapshot().available)
    payload = await gpu()
    assert payload["available"] is True and payload["reason"] is None


def _sampler(serverapp):
    return serverapp.web_app.settings["jupyter_air_gpu"].sampler


async def _sleep(seconds):
    import asyncio

    await asyncio.sleep(seconds)


async def test_a_node_is_a_404_without_a_cluster(jp_fetch):
    # Given a server with no Ray cluster configured, When the panel asks for a node
    with pytest.raises(HTTPClientError) as caught:
        await jp_fetch("jupyter-air", "gpu", params={"node": "abc"})
    # Then the answer is 404 saying how to watch a cluster, and the payload of the plain route has no node list
    assert caught.value.code == 404
    assert "c.JupyterAir.ray_address" in json.loads(caught.value.response.body)["message"]


@pytest.mark.parametrize("air_config", [{"gpu_source": "simulated", "simulated_gpus": 3}])
async def test_the_server_passes_its_gpu_source_to_its_kernels_and_terminals(gpu):
    # Given a server configured (not through the environment) for 3 simulated GPUs
    payload = await gpu()
    assert payload["source"] == "simulated" and len(payload["devices"]) == 3
    # Then the environment its kernels and terminals inherit says the same, so %air_gpu and air agree
    assert os.environ["JUPYTER_AIR_GPU_SOURCE"] == "simulated" and os.environ["JUPYTER_AIR_SIMULATED_GPUS"] == "3"
