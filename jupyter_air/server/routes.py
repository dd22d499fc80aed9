"""Every URL pattern of the server extension, under ``{base_url}jupyter-air/``."""

from __future__ import annotations

from .handlers import (
    ExperimentOpenHandler,
    GpuHandler,
    GpuRefreshHandler,
    HeldNodesReleaseHandler,
    IdleHoldersHandler,
    ProxyRouteOffHandler,
    RunOpenHandler,
    RunStopHandler,
    VersionHandler,
)
from .panel_handlers import (
    ExperimentShareHandler,
    GpuQueueHandler,
    JobCancelHandler,
    JobHandler,
    JobLogDownloadHandler,
    JobLogsHandler,
    JobPermissionsHandler,
    JobsHandler,
    RunsHandler,
    ScheduleActionHandler,
    SchedulesHandler,
    UsageHandler,
)

NAMESPACE = "jupyter-air"


def handlers(allow_proxy_route: bool = False) -> list[tuple]:
    """Patterns relative to the server's base_url (the extension app prefixes it).

    Unless allowed, ``/proxy/...`` is answered here: extensions load in name order, so jupyter_air's
    patterns come before jupyter_server_proxy's and win.
    """
    routes = [
        (f"/{NAMESPACE}/gpu", GpuHandler),
        (f"/{NAMESPACE}/gpu/refresh", GpuRefreshHandler),
        (f"/{NAMESPACE}/gpu/idle-holders", IdleHoldersHandler),
        (f"/{NAMESPACE}/gpu/queue", GpuQueueHandler),
        (rf"/{NAMESPACE}/gpu/held-nodes/([0-9]{{1,10}})/release", HeldNodesReleaseHandler),
        (f"/{NAMESPACE}/version", VersionHandler),
        (rf"/{NAMESPACE}/runs/([0-9a-zA-Z_-]+)/open", RunOpenHandler),
        (rf"/{NAMESPACE}/runs/([0-9a-zA-Z_-]+)/stop", RunStopHandler),
        (rf"/{NAMESPACE}/experiments/([0-9a-zA-Z_-]+)/open", ExperimentOpenHandler),
        (f"/{NAMESPACE}/experiments/share", ExperimentShareHandler),
        (f"/{NAMESPACE}/runs", RunsHandler),
        (f"/{NAMESPACE}/usage", UsageHandler),
        (f"/{NAMESPACE}/jobs", JobsHandler),
        (rf"/{NAMESPACE}/jobs/([^/]+)", JobHandler),
        (rf"/{NAMESPACE}/jobs/([^/]+)/logs", JobLogsHandler),
        (rf"/{NAMESPACE}/jobs/([^/]+)/logs/download", JobLogDownloadHandler),
        (rf"/{NAMESPACE}/jobs/([^/]+)/cancel", JobCancelHandler),
        (rf"/{NAMESPACE}/jobs/([^/]+)/permissions", JobPermissionsHandler),
        (f"/{NAMESPACE}/schedules", SchedulesHandler),
        (rf"/{NAMESPACE}/schedules/([^/]+)/(pause|resume|run-now)", ScheduleActionHandler),
    ]
    if not allow_proxy_route:
        routes.append((r"/proxy/(.*)", ProxyRouteOffHandler))
    return routes
