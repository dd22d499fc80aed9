"""CI check: no route of jupyter_air may lack authentication (JupyterServerAuthWarning fails this test)."""

from __future__ import annotations

import json
import warnings

import pytest
from jupyter_server.utils import JupyterServerAuthWarning


@pytest.fixture
def jp_server_config(air_config, fake_nvml):
    # With allow_unauthenticated_access=False, jupyter_server warns about every route that lacks
    # @tornado.web.authenticated; the warning is turned into an error below, so the extension would not load.
    warnings.simplefilter("error", JupyterServerAuthWarning)
    return {
        "ServerApp": {"jpserver_extensions": {"jupyter_air": True}, "allow_unauthenticated_access": False},
        "JupyterAir": air_config,
    }


async def test_every_route_loads_with_authentication_enforced(jp_fetch, jp_serverapp):
    # Given a server that refuses undecorated routes
    # When the extension's routes are called
    version = await jp_fetch("jupyter-air", "version")
    gpu = await jp_fetch("jupyter-air", "gpu")
    refresh = await jp_fetch("jupyter-air", "gpu", "refresh", method="POST", body=b"")
    jobs = await jp_fetch("jupyter-air", "jobs")
    # Then each exists (the extension loaded, so every handler verb is authenticated)
    assert json.loads(version.body)["version"]
    assert gpu.code == refresh.code == jobs.code == 200
