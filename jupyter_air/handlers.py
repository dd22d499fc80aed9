"""Thin authenticated Tornado handlers over the GPU service."""

from __future__ import annotations

import json

import tornado.web
from jupyter_server.base.handlers import APIHandler

from . import __version__
from .gpu.service import BadRequest, GpuService, parse_since


class BaseHandler(APIHandler):
    """Turns the model's errors into HTTP errors in one place."""

    @property
    def gpu(self) -> GpuService:
        return self.settings["jupyter_air_gpu"]

    def write_error(self, status_code: int, **kwargs) -> None:
        exc = kwargs.get("exc_info", (None, None, None))[1]
        if isinstance(exc, BadRequest):
            self.set_status(400)
            self.finish(json.dumps({"message": str(exc)}))
            return
        super().write_error(status_code, **kwargs)

    def since(self) -> int | None:
        return parse_since(self.get_query_argument("since", None))


class GpuHandler(BaseHandler):
    @tornado.web.authenticated
    async def get(self) -> None:
        self.finish(json.dumps(await self.gpu.snapshot(self.since())))


class GpuRefreshHandler(BaseHandler):
    @tornado.web.authenticated
    async def post(self) -> None:
        self.finish(json.dumps(await self.gpu.refresh(self.since())))


class VersionHandler(BaseHandler):
    @tornado.web.authenticated
    def get(self) -> None:
        self.finish(json.dumps({"version": __version__}))


class ProxyRouteOffHandler(BaseHandler):
    """Answers jupyter-server-proxy's generic ``/proxy/<port>/`` route while it is turned off."""

    MESSAGE = (
        "The generic /proxy/<port>/ route of jupyter-server-proxy is turned off by jupyter_air: it reaches any "
        "local port and skips Jupyter's origin check. Set c.JupyterAir.allow_proxy_route = True in "
        "jupyter_server_config.py to turn it on."
    )

    def _refuse(self, *args) -> None:
        self.set_status(404)
        self.finish(json.dumps({"message": self.MESSAGE}))

    get = post = put = delete = patch = head = options = tornado.web.authenticated(_refuse)
