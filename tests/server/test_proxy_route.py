"""jupyter-server-proxy's generic /proxy/<port>/ route is off unless an administrator turns it on."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from tornado.httpclient import HTTPClientError


class Hello(BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200)
        self.end_headers()
        self.wfile.write(b"a local service")

    def log_message(self, *args):
        pass


@pytest.fixture
def local_service():
    """Another program's HTTP server on a loopback port of this machine."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), Hello)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()


@pytest.fixture
def allow_proxy_route() -> bool:
    return False


@pytest.fixture
def jp_server_config(air_config, fake_nvml, allow_proxy_route):
    extensions = {"jupyter_air": True, "jupyter_server_proxy": True}
    return {
        "ServerApp": {"jpserver_extensions": extensions},
        "JupyterAir": {**air_config, "allow_proxy_route": allow_proxy_route},
    }


async def test_the_generic_proxy_route_is_off_by_default(jp_fetch, local_service):
    # Given a local service on a loopback port, When it is asked for through /proxy/<port>/
    with pytest.raises(HTTPClientError) as refused:
        await jp_fetch("proxy", str(local_service), "")
    # Then the server refuses, saying how to turn the route on
    assert refused.value.code == 404
    assert "c.JupyterAir.allow_proxy_route = True" in json.loads(refused.value.response.body)["message"]


@pytest.mark.parametrize("allow_proxy_route", [True])
async def test_the_generic_proxy_route_works_once_allowed(jp_fetch, local_service):
    # Given an administrator who turned the route on, When the service is asked for, Then it answers
    response = await jp_fetch("proxy", str(local_service), "")
    assert response.code == 200 and response.body == b"a local service"
