"""The ``{base_url}mlflow/`` routes: jupyter-server-proxy's handler for the MLflow UI on its Unix socket,
refusing cross-site writes, starting the UI for authenticated requests only, and never passing Jupyter's
credentials (or what a client claims about forwarding) on."""

from __future__ import annotations

from urllib.parse import parse_qsl, urlencode

from jupyter_server_proxy.config import ServerProcess
from jupyter_server_proxy.handlers import AddSlashHandler
from tornado import web

from .proxy import PROXY_NAME, mlflow_server
from .ui_process import MlflowUiUnavailable

#: Methods a cross-site page may send: they read, so the same-origin policy already keeps their answers private.
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
#: Request headers and query arguments that carry Jupyter's credentials: MLflow never sees them.
CREDENTIAL_HEADERS = ("Cookie", "Authorization", "X-XSRFToken")
CREDENTIAL_ARGUMENTS = frozenset({"token", "_xsrf"})
#: Headers MLflow never sees: the page's address (which may carry ``?token=``), and what a client claims about
#: proxies in front of it (jupyter-server-proxy adds its own ``X-Forwarded-Prefix`` and ``-Context`` after this).
DROPPED_HEADERS = ("Referer", "Forwarded")
DROPPED_PREFIXES = ("x-forwarded-",)
_DROPPED = frozenset(name.lower() for name in CREDENTIAL_HEADERS + DROPPED_HEADERS)


def mlflow_handlers() -> list[tuple]:
    """Patterns relative to the server's base_url: the proxied MLflow UI, and its address without the slash."""
    proxy, kwargs = ServerProcess(name=PROXY_NAME, **mlflow_server()).make_proxy_handler()

    class MlflowProxyHandler(proxy):
        """jupyter-server-proxy skips Jupyter's XSRF check ("defer to proxied apps"), and MLflow's own
        cross-origin check sees no Origin (the spec clears it): so Jupyter's origin check is applied
        here, as on Jupyter's REST API. It honours ``ServerApp.allow_origin`` / ``allow_origin_pat``
        and lets through token-authenticated requests and requests without an Origin header."""

        async def prepare(self, *args, **kwargs):
            await super().prepare(*args, **kwargs)  # refuses, or sends to the login page, the unauthenticated
            if not self.current_user:
                return
            if self.request.method not in SAFE_METHODS and not self.check_origin():
                raise web.HTTPError(403, "Blocking cross-origin %s to the MLflow UI", self.request.method)
            try:
                socket = await self.settings["jupyter_air_mlflow_ui"].ensure_running()  # started on first use
            except MlflowUiUnavailable as err:
                raise web.HTTPError(503, "%s", str(err)) from None
            self.unix_socket = str(socket)

        def proxy_request_headers(self):
            headers = super().proxy_request_headers()
            for name in list(headers):
                if name.lower() in _DROPPED or name.lower().startswith(DROPPED_PREFIXES):
                    del headers[name]
            return headers

        def get_client_uri(self, protocol, host, port, proxied_path):
            uri, _, query = super().get_client_uri(protocol, host, port, proxied_path).partition("?")
            kept = [(k, v) for k, v in parse_qsl(query, keep_blank_values=True) if k not in CREDENTIAL_ARGUMENTS]
            return f"{uri}?{urlencode(kept)}" if kept else uri

    # jupyter-server-proxy authenticates in prepare(); decorating every verb as well says so to Jupyter's
    # check for undecorated routes (which fails with allow_unauthenticated_access=False).
    for method in proxy.SUPPORTED_METHODS:
        verb = method.lower()
        setattr(MlflowProxyHandler, verb, web.authenticated(getattr(proxy, verb)))
    return [(f"/{PROXY_NAME}/(.*)", MlflowProxyHandler, kwargs), (f"/{PROXY_NAME}", AddSlashHandler)]
