"""The Jupyter server extension: configuration (``c.JupyterAir.*``), the shared sampler, the routes, the MLflow UI."""

from __future__ import annotations

import os
import shutil

from jupyter_server.extension.application import ExtensionApp
from traitlets import Bool, Float, Integer, TraitError, Unicode, validate

from .gpu.sampler import Sampler
from .gpu.service import GpuService
from .gpu.sources import SOURCE_KINDS, open_source
from .routes import handlers

SOURCE_ENV = "JUPYTER_AIR_GPU_SOURCE"


class JupyterAir(ExtensionApp):
    """GPU monitoring for JupyterLab: one NVML sampler per server, shared by every open panel."""

    name = "jupyter_air"

    sample_interval_seconds = Float(
        10.0, config=True,
        help="Seconds between two GPU samples. Lower values cost more NVML calls; 1-60 is sensible (tests use 0.1).",
    )
    history_seconds = Float(
        7200.0, config=True,
        help="Seconds of history the server keeps for the GPU panel; capacity is history / interval samples "
             "(7200 s at 10 s = 720 samples, about 60 KB per GPU).",
    )
    idle_timeout_seconds = Float(
        300.0, config=True,
        help="Sampling stops after this many seconds without a request to the GPU routes (no NVML calls at all "
             "then) and resumes on the next request or Refresh.",
    )
    gpu_source = Unicode(
        "auto", config=True,
        help="Where GPU figures come from: 'auto' (NVML when it loads, else none), 'nvml', 'simulated' (made-up "
             "GPUs for demos and UI tests, always labelled simulated) or 'none'. The environment variable "
             f"{SOURCE_ENV} overrides this setting.",
    )
    simulated_gpus = Integer(
        2, config=True, help="Number of GPUs the 'simulated' source reports (1-16).",
    )

    allow_proxy_route = Bool(
        False, config=True,
        help="Turn on jupyter-server-proxy's generic /proxy/<port>/ route (off by default): it forwards "
             "authenticated requests to any port of this machine without Jupyter's origin check. jupyter_air's "
             "MLflow UI does not need it.",
    )

    @validate("sample_interval_seconds", "history_seconds", "idle_timeout_seconds")
    def _positive(self, proposal):
        if proposal["value"] <= 0:
            raise TraitError(f"JupyterAir.{proposal['trait'].name} must be a positive number of seconds, "
                             f"got {proposal['value']}.")
        return proposal["value"]

    @validate("gpu_source")
    def _known_source(self, proposal):
        if proposal["value"] not in SOURCE_KINDS:
            raise TraitError(f"JupyterAir.gpu_source must be one of {', '.join(SOURCE_KINDS)}, "
                             f"got {proposal['value']!r}.")
        return proposal["value"]

    @validate("simulated_gpus")
    def _gpu_count(self, proposal):
        if not 1 <= proposal["value"] <= 16:
            raise TraitError(f"JupyterAir.simulated_gpus must be between 1 and 16, got {proposal['value']}.")
        return proposal["value"]

    def _source_kind(self) -> str:
        kind = os.environ.get(SOURCE_ENV) or self.gpu_source
        if kind not in SOURCE_KINDS:
            self.log.error("%s=%r is not one of %s; using 'none'.", SOURCE_ENV, kind, ", ".join(SOURCE_KINDS))
            return "none"
        return kind

    def initialize_settings(self) -> None:
        kind, count = self._source_kind(), self.simulated_gpus
        self.sampler = Sampler(
            lambda: open_source(kind, count),
            interval_seconds=self.sample_interval_seconds,
            history_seconds=self.history_seconds,
            idle_timeout_seconds=self.idle_timeout_seconds,
        )
        service = GpuService(self.sampler, self.serverapp.kernel_manager, self.serverapp.session_manager)
        self.settings["jupyter_air_gpu"] = service
        self.sampler.start()
        self.log.info("jupyter_air: GPU source %r, sampling every %s s.", kind, self.sample_interval_seconds)

    def initialize_handlers(self) -> None:
        from .tracking.proxy import socket_path
        from .tracking.proxy_handler import mlflow_handlers  # lazy: jupyter-server-proxy (aiohttp) takes ~0.6 s

        self.mlflow_socket = socket_path()
        self.handlers.extend(handlers(self.allow_proxy_route) + mlflow_handlers(self.mlflow_socket))

    async def stop_extension(self) -> None:
        self.sampler.stop()
        shutil.rmtree(self.mlflow_socket.parent, ignore_errors=True)
