"""The Jupyter server extension: its settings (``c.JupyterAir.*``), what it starts with the server and stops with it
(the GPU sampler and the cluster's GPU panel, the job and idle-holder checks, the embedded MLflow UI, AIR_HOME's
zygote, the terminals' set-up) and its routes."""

from __future__ import annotations

import os
import time

from jupyter_server.extension.application import ExtensionApp
from traitlets import Bool, Enum, Float, Integer, TraitError, Unicode, validate

from jupyter_air.workloads.surfaces.team_jobs import JOBS_URL_ENV, ServiceJobs

from .. import residents
from ..cluster.address import RAY_ADDRESS_ENV, configured_address
from ..cluster.errors import BadAddress
from ..gpu.cluster import ClusterGpu
from ..gpu.idle import IdleHolders
from ..gpu.sampler import Sampler
from ..gpu.service import GpuService
from ..gpu.sources import SIMULATED_GPUS_ENV, SOURCE_ENV, SOURCE_KINDS, open_source, simulated_gpus, source_kind
from ..programs import path_first
from ..tracking.links import PUBLIC_URL_ENV
from ..tracking.proxy_handler import mlflow_handlers
from ..tracking.ui_retry import MAX_RETRY_SECONDS, RETRY_SECONDS
from .idle_use import IdleUse
from .resident import ZygoteWarmup, mlflow_ui
from .routes import handlers
from .tasks import IdleHolderChecks, JobChecks
from .terminals import set_up_terminals


class JupyterAir(ExtensionApp):
    """GPU monitoring for JupyterLab: one NVML sampler per server, shared by every open panel."""

    name = "jupyter_air"

    sample_interval_seconds = Float(
        10.0,
        config=True,
        help="Seconds between two GPU samples. Lower values cost more NVML calls; 1-60 is sensible (tests use 0.1).",
    )
    history_seconds = Float(
        7200.0,
        config=True,
        help="Seconds of history the server keeps for the GPU panel; capacity is history / interval samples "
        "(7200 s at 10 s = 720 samples, about 60 KB per GPU).",
    )
    idle_timeout_seconds = Float(
        300.0,
        config=True,
        help="Sampling stops after this many seconds without a request to the GPU routes (no NVML calls at all "
        "then) and resumes on the next request or Refresh.",
    )
    gpu_source = Enum(
        SOURCE_KINDS,
        default_value="auto",
        config=True,
        help="Where GPU figures come from: 'auto' (NVML when it loads, else none), 'nvml', 'simulated' (made-up "
        "GPUs for demos and UI tests, always labelled simulated) or 'none'. The environment variable "
        f"{SOURCE_ENV} overrides this setting.",
    )
    simulated_gpus = Integer(
        2,
        min=1,
        max=16,
        config=True,
        help="Number of GPUs the 'simulated' source reports (1-16).",
    )

    mlflow_ui_autostart = Bool(
        True,
        config=True,
        help="Start the embedded MLflow UI (AIR_HOME's resident MLflow server, shared with kernels and `air`) in the "
        "background as soon as its SQLite store exists (when the server starts, or within a second of the first "
        "run creating it), and keep it up while this server runs, so run links open at once and kernels find it. "
        "False starts it on the first visit to {base_url}mlflow/ instead (10-20 s) unless a kernel or `air` "
        "started it already; it then stops after AIR_MLFLOW_IDLE_SECONDS (default 1800) without a request.",
    )
    fork_zygote_at_start = Bool(
        True,
        config=True,
        help="Start AIR_HOME's fork server zygote in the background when the server starts (when torch is "
        "installed), so the first .distributed() of a new kernel forks its ranks from a process that imported torch "
        "already instead of waiting for the import. It serves every kernel of AIR_HOME and stops after "
        "AIR_FORKS_IDLE_SECONDS (default 1800) with no kernel using it. False leaves it to the first kernel that "
        "defines a @distributed function (saves its memory, about 225 MB, where no notebook runs calls).",
    )
    mlflow_ui_retry_seconds = Float(
        RETRY_SECONDS,
        min=0.0,
        config=True,
        help="Seconds before the background start of the MLflow UI (mlflow_ui_autostart) tries again after a start "
        f"failed, e.g. on a damaged mlflow.db; the wait doubles at each failure, up to {MAX_RETRY_SECONDS / 60:g} "
        "minutes, and ends at once when the store file changes (moved aside, restored, replaced). Each failure is "
        "logged once per state of the file. 0 tries again at every check (each second), as before this setting "
        "existed.",
    )
    public_url = Unicode(
        "",
        config=True,
        help="Public address of this server as people reach it, e.g. https://gpu-box.example.org/ or "
        "https://hub.example.org/user/alice/ (default: empty: JupyterHub's public URL when there is one, else "
        "the server's own URL). Links printed by the `air` command and scripts in this server's terminals start "
        "with it; it is passed to them as AIR_PUBLIC_URL.",
    )
    allow_proxy_route = Bool(
        False,
        config=True,
        help="Turn on jupyter-server-proxy's generic /proxy/<port>/ route (off by default): it forwards "
        "authenticated requests to any port of this machine without Jupyter's origin check. jupyter_air's "
        "MLflow UI does not need it.",
    )

    terminals_open_at_root = Bool(
        True,
        config=True,
        help="Open new JupyterLab terminals that name no folder (File > New > Terminal, the launcher at the file "
        "browser's root) at ServerApp.root_dir, where relative paths in notebooks and examples point, rather than in "
        "the folder the server was started from. A terminal started from a folder of the file browser opens there "
        "either way. False leaves jupyter_server_terminals' default.",
    )

    ray_address = Unicode(
        "",
        config=True,
        help="The Ray cluster whose nodes the GPU panel shows, and where notebooks and `air run` send multi-node "
        "work: 'auto' when this server runs on a node of the cluster, 'head-host:6379', or 'ray://head-host:10001' "
        "(Ray Client) for a remote head. Empty (the default): no cluster, Ray is never imported. Needs "
        f"`pip install 'jupyter-air[ray]'`. The environment variable {RAY_ADDRESS_ENV} overrides this setting; the "
        "server passes the address to its kernels and terminals in it. A cluster started with Ray's token "
        "authentication (RAY_AUTH_MODE=token) needs RAY_AUTH_MODE=token and its token (~/.ray/auth_token, "
        "RAY_AUTH_TOKEN_PATH or RAY_AUTH_TOKEN) in the server's environment, which kernels and terminals inherit; "
        "the server warns when its cluster accepts calls without a token.",
    )

    jobs_service_url = Unicode(
        "",
        config=True,
        help="The team's job service (air-jobs on JupyterHub), e.g. 'http://127.0.0.1:8081/services/air-jobs/'. When "
        "set, the Experiment panel's job routes (list, submit, logs, cancel, permissions) are answered by it, as this "
        "server's hub user (its JUPYTERHUB_API_TOKEN, whose role needs access:services!service=air-jobs); empty (the "
        f"default): the jobs under AIR_HOME. The environment variable {JOBS_URL_ENV} overrides this setting.",
    )

    job_check_interval_seconds = Float(
        5.0,
        config=True,
        help="Seconds between two checks that the supervisors of running `air` jobs and the kernels of notebook runs "
        "under AIR_HOME are alive; a job whose supervisor died (killed, out of memory) is marked FAILED, its workload "
        "stopped and its MLflow run ended, and a run whose kernel died is ended FAILED, within this time. Each check "
        "also fires the schedules that are due, and a schedule due before the next check wakes one at its fire time. "
        "0 turns the check off (the next `air` command still checks jobs; `air scheduler` fires schedules).",
    )

    idle_holder_minutes = Float(
        30.0,
        min=0.0,
        config=True,
        help="Minutes after which a kernel that executed nothing, while holding at least idle_holder_min_memory_mib "
        "on a GPU that stayed at 0 % utilization, is an idle GPU holder: listed by GET "
        "{base_url}jupyter-air/gpu/idle-holders, marked in the GPU panel, and announced by JupyterLab with Shut down "
        "and Restart actions. Fractions work (0.5 = 30 s). 0 turns the check off.",
    )
    idle_holder_min_memory_mib = Float(
        1024.0,
        min=0.0,
        config=True,
        help="MiB of GPU memory a kernel must hold on one GPU to count as an idle GPU holder (default 1024: a CUDA "
        "context alone takes about 300-500 MiB). Its child processes count for it, and with ray_address so do the "
        "actors of the Ray job it drives (and their children), node by node.",
    )
    idle_holder_check_seconds = Float(
        60.0,
        config=True,
        help="Seconds between two idle GPU holder checks. They run whether or not a GPU panel is open: while the "
        "panel samples, a check reuses its samples; once sampling stopped as idle, a check reads NVML once itself "
        "(utilization, memory and processes of each GPU) and sampling stays stopped. A GPU's utilization counts "
        "as 0 % only when every look at it (samples or checks) saw 0 %. With ray_address, each node running actors "
        "of a kernel's Ray job is read the same way by its own sampler.",
    )

    @validate("sample_interval_seconds", "history_seconds", "idle_timeout_seconds", "idle_holder_check_seconds")
    def _positive(self, proposal):
        if proposal["value"] <= 0:
            raise TraitError(
                f"JupyterAir.{proposal['trait'].name} must be a positive number of seconds, got {proposal['value']}."
            )
        return proposal["value"]

    def _source_kind(self) -> str:
        try:
            return source_kind(self.gpu_source)
        except ValueError as err:
            self.log.error("%s Using 'none'.", err)
            return "none"

    def initialize_settings(self) -> None:
        kind, count = self._source_kind(), simulated_gpus(self.simulated_gpus)
        # Kernels and terminals started by this server inherit its choice: one source everywhere. They also find
        # this environment's `python`, `air` and `torchrun` first, activated or not.
        os.environ[SOURCE_ENV], os.environ[SIMULATED_GPUS_ENV] = kind, str(count)
        os.environ["PATH"] = path_first(os.environ.get("PATH"))
        residents.mark_starter()  # what it and its kernels start for AIR_HOME stops with it, unless used elsewhere
        if self.public_url:
            os.environ[PUBLIC_URL_ENV] = self.public_url
        self.sampler = Sampler(
            lambda: open_source(kind, count),
            interval_seconds=self.sample_interval_seconds,
            history_seconds=self.history_seconds,
            idle_timeout_seconds=self.idle_timeout_seconds,
        )
        self.cluster = self._cluster(kind, count)
        self.idle_holders = IdleHolders(self.idle_holder_minutes, self.idle_holder_min_memory_mib, time.time())
        service = GpuService(
            self.sampler,
            self.serverapp.kernel_manager,
            self.serverapp.session_manager,
            cluster=self.cluster,
            idle_holders=self.idle_holders,
        )
        self.settings["jupyter_air_gpu"] = service
        if url := os.environ.get(JOBS_URL_ENV) or self.jobs_service_url:
            os.environ[JOBS_URL_ENV] = url  # kernels and terminals (`air`) reach the same service
            self.settings["jupyter_air_jobs"] = ServiceJobs.from_environment()
            self.log.info("jupyter_air: jobs are the team's job service's, at %s.", url)
        self.sampler.start()
        self._tasks = []
        if self.idle_holders.enabled:
            self._tasks.append(
                IdleHolderChecks(
                    self.idle_holders,
                    self.sampler,
                    self.serverapp.kernel_manager,
                    self.serverapp.session_manager,
                    self.idle_holder_check_seconds,
                    self.log,
                    self.cluster,
                    IdleUse.of_air_home(),
                )
            )
        if self.job_check_interval_seconds > 0:
            self._tasks.append(JobChecks(self.job_check_interval_seconds, self.log))
        self.mlflow_ui, ui_tasks = mlflow_ui(self.log, self.mlflow_ui_retry_seconds, self.mlflow_ui_autostart)
        self.settings["jupyter_air_mlflow_ui"] = self.mlflow_ui
        self._tasks += ui_tasks + ([ZygoteWarmup(self.log)] if self.fork_zygote_at_start else [])
        for task in self._tasks:
            task.start()
        self.log.info("jupyter_air: GPU source %r, sampling every %s s.", kind, self.sample_interval_seconds)

    def _cluster(self, kind: str, count: int) -> ClusterGpu | None:
        """Every node's GPUs when a Ray cluster is configured (joined on the first GPU request, not now)."""
        try:
            address = configured_address(os.environ.get(RAY_ADDRESS_ENV) or self.ray_address or None)
        except BadAddress as err:
            self.log.error("jupyter_air: %s. The GPU panel shows this node only.", err)
            return None
        if address is None:
            return None
        os.environ[RAY_ADDRESS_ENV] = address  # kernels and terminals started by this server use the same cluster
        self.log.info("jupyter_air: the GPU panel shows every node of the Ray cluster at %s.", address)
        return ClusterGpu(
            address, kind, count, self.sample_interval_seconds, self.history_seconds, self.idle_timeout_seconds
        )

    def initialize_handlers(self) -> None:
        self.handlers.extend(handlers(self.allow_proxy_route) + mlflow_handlers())

    async def _start_jupyter_server_extension(self, serverapp) -> None:
        # After every extension loaded: jupyter_server_terminals made its terminal manager by now.
        set_up_terminals(serverapp, self.terminals_open_at_root, self.log)

    async def stop_extension(self) -> None:
        self.sampler.stop()
        if self.cluster is not None:
            self.cluster.close()
        for task in self._tasks:
            task.stop()
        # AIR_HOME's MLflow server is not this server's: kernels and `air` use it too; it stops once idle.
