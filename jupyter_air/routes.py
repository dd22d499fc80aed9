"""Every URL pattern of the server extension, under ``{base_url}jupyter-air/``."""

from __future__ import annotations

from .handlers import GpuHandler, GpuRefreshHandler, VersionHandler

NAMESPACE = "jupyter-air"


def handlers() -> list[tuple]:
    """Patterns relative to the server's base_url (the extension app prefixes it)."""
    return [
        (f"/{NAMESPACE}/gpu", GpuHandler),
        (f"/{NAMESPACE}/gpu/refresh", GpuRefreshHandler),
        (f"/{NAMESPACE}/version", VersionHandler),
    ]
