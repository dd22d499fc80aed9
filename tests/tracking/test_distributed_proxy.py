"""The MLflow UI served through a real Jupyter server at {base_url}mlflow/, on the embedded store."""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil
import pytest
from jupyter_server.utils import url_path_join
from waiting import eventually

from jupyter_air.server.tasks import UiAutostart

#: An origin the server's configuration trusts (``ServerApp.allow_origin``), like a hub in front of it.
TRUSTED_ORIGIN = "https://lab.example.org"


@pytest.fixture
def jp_base_url():
    return "/user/alice/"


@pytest.fixture
def jp_server_config(store):
    # jupyter_air serves the route; jupyter-server-proxy only shows the launcher tile (an entry point).
    return {
        "ServerApp": {
            "jpserver_extensions": {"jupyter_air": True, "jupyter_server_proxy": True},
            "allow_origin": TRUSTED_ORIGIN,
        },
        "JupyterAir": {"gpu_source": "none", "mlflow_ui_autostart": False, "fork_zygote_at_start": False},
    }


def mlflow_ui(serverapp):
    """The server's embedded MLflow UI (``ui_process.MlflowUi``)."""
    return serverapp.web_app.settings["jupyter_air_mlflow_ui"]


@pytest.fixture
def browser(http_server_client, jp_base_url, jp_http_port):
    """Calls MLflow's API as a logged-in browser does: with Jupyter's login cookie (no token) and an Origin."""
    same_origin = f"http://127.0.0.1:{jp_http_port}"

    def fetch(cookie: str, path: str, body: dict | None = None, origin: str | None = same_origin):
        headers = {"Cookie": cookie, "Content-Type": "application/json"}
        if origin is not None:
            headers["Origin"] = origin
        method = "GET" if body is None else "POST"
        return http_server_client.fetch(
            url_path_join(jp_base_url, "mlflow", "ajax-api", "2.0", "mlflow", path),
            method=method,
            body=None if body is None else json.dumps(body),
            headers=headers,
            raise_error=False,
        )

    return fetch


@pytest.mark.usefixtures("no_orphans")
async def test_run_link_opens_through_the_jupyter_server_and_refuses_cross_site_changes(
    jp_fetch, jp_serverapp, store, browser, air_home, capfd
):
    # Given a run in the embedded store, and a browser logged in to Jupyter (its cookie, no token)
    experiment_id = store.create_experiment("proxy-<b>")
    run = store.create_run(experiment_id, run_name="proxied")
    servers = await jp_fetch("server-proxy", "servers-info")
    cookie = next(c.split(";")[0] for c in servers.headers.get_list("Set-Cookie") if c.startswith("username-"))
    search = {"experiment_ids": [experiment_id]}

    # When the MLflow UI is opened under the server's base URL (started on first use)
    page = await jp_fetch("mlflow/", request_timeout=150)

    # Then it answers with MLflow's page, whose assets are relative so they load under the prefix
    assert page.code == 200 and b"<title>MLflow</title>" in page.body
    assert b'src="static-files/' in page.body
    # And MLflow's request lines go to its own log under AIR_HOME, not to the Jupyter server's output
    await jp_fetch("mlflow/", request_timeout=30)
    assert '"GET / HTTP/1.1" 200' in (air_home / "logs" / "mlflow-ui.log").read_text()
    printed = capfd.readouterr()
    assert '"GET / HTTP/1.1"' not in printed.out + printed.err
    # And MLflow listens on a Unix socket in a folder only this user can enter, on no TCP port at all
    server = mlflow_ui(jp_serverapp).server
    tree = [psutil.Process(server.pid), *psutil.Process(server.pid).children(recursive=True)]
    assert [c for p in tree for c in p.net_connections("inet") if c.status == psutil.CONN_LISTEN] == []
    sockets = {c.laddr for p in tree for c in p.net_connections("unix") if c.laddr}
    socket = next(s for s in sockets if s.endswith("mlflow.sock"))
    assert stat.S_IMODE(os.stat(os.path.dirname(socket)).st_mode) == 0o700
    # And the launcher tile opens that same address
    tiles = json.loads(servers.body)["server_processes"]
    assert [(t["name"], t["launcher_entry"]["path_info"]) for t in tiles] == [("mlflow", "mlflow/")]
    # And the UI's own API, asked as the browser asks it (POST from the page's origin), finds the run
    found = await browser(cookie, "runs/search", search)
    assert found.code == 200
    assert [r["info"]["run_id"] for r in json.loads(found.body)["runs"]] == [run.info.run_id]

    # When a page on another site makes that browser delete the experiment
    attack = await browser(cookie, "experiments/delete", {"experiment_id": experiment_id}, origin="http://evil.example")

    # Then Jupyter refuses it before MLflow sees it, and the experiment is still there
    assert attack.code == 403
    assert store.get_experiment(experiment_id).lifecycle_stage == "active"
    # While a trusted origin (ServerApp.allow_origin), a script with a token and a GET without Origin still get in
    trusted = await browser(cookie, "runs/search", search, origin=TRUSTED_ORIGIN)
    scripted = await jp_fetch(
        "mlflow",
        "ajax-api",
        "2.0",
        "mlflow",
        "runs",
        "search",
        method="POST",
        body=json.dumps(search),
        headers={"Origin": "https://elsewhere.example", "Content-Type": "application/json"},
    )
    read = await browser(cookie, f"experiments/get?experiment_id={experiment_id}", origin=None)
    assert trusted.code == scripted.code == read.code == 200
    assert json.loads(read.body)["experiment"]["name"] == "proxy-<b>"
    # And a change from the page's own origin goes through
    rename = {"experiment_id": experiment_id, "new_name": "proxy-kept"}
    renamed = await browser(cookie, "experiments/update", rename)
    assert renamed.code == 200 and store.get_experiment(experiment_id).name == "proxy-kept"

    # When the UI uploads an artifact through its artifact proxy (as its pages do)
    uploaded = await jp_fetch(
        "mlflow", "ajax-api", "2.0", "mlflow-artifacts", "artifacts", "proxied", "note.txt", method="PUT", body="kept"
    )
    # Then it is kept under AIR_HOME's artifact folder, not in the Jupyter server's working folder
    assert uploaded.code == 200
    assert (air_home / "mlartifacts" / "proxied" / "note.txt").read_text() == "kept"
    assert not (Path.cwd() / "mlartifacts").exists()


#: Stands in for MLflow on the Unix socket: answers every request with the path and headers it received.
ECHO_SERVER = Path(__file__).with_name("echo_server.py")


@pytest.fixture
def echo_instead_of_mlflow(jp_serverapp, monkeypatch):
    """A server that echoes what it receives, on a Unix socket in a 0700 folder, stands in for the MLflow UI."""
    folder = Path(tempfile.mkdtemp(prefix="echo-"))
    socket = folder / "echo.sock"
    echo = subprocess.Popen([sys.executable, str(ECHO_SERVER), str(socket)])
    deadline = time.monotonic() + 60
    while not socket.exists():
        assert echo.poll() is None and time.monotonic() < deadline, "the echo server did not start"
        time.sleep(0.05)

    async def ensure_running():
        return socket

    monkeypatch.setattr(mlflow_ui(jp_serverapp), "ensure_running", ensure_running)
    yield
    echo.kill()
    echo.wait()
    socket.unlink(missing_ok=True)
    folder.rmdir()


@pytest.mark.usefixtures("echo_instead_of_mlflow", "no_orphans")
async def test_jupyter_credentials_never_reach_the_proxied_server(
    jp_fetch, http_server_client, jp_base_url, jp_auth_header
):
    # Given a logged-in browser's cookie, Jupyter's token in a header, and the token in a URL's query
    servers = await jp_fetch("server-proxy", "servers-info")
    cookie = next(c.split(";")[0] for c in servers.headers.get_list("Set-Cookie") if c.startswith("username-"))
    token = jp_auth_header["Authorization"].split()[-1]
    # And what a page or a client adds: the page's address with the token in it, claims about proxies in front
    claims = {
        "Referer": f"https://lab.example.org{jp_base_url}lab?token={token}",
        "X-Forwarded-For": "203.0.113.9",
        "X-Forwarded-Host": "evil.example",
        "X-Forwarded-Prefix": "/evil/",
        "Forwarded": "for=203.0.113.9;host=evil.example",
    }

    def fetch(path: str, headers: dict):
        return http_server_client.fetch(url_path_join(jp_base_url, "mlflow", path), headers=headers, request_timeout=60)

    # When each reaches the MLflow route (served here by a server that echoes what it receives)
    answers = {
        "/ajax-api/x?experiment=1": await fetch("ajax-api/x?experiment=1", {"Cookie": cookie, "X-XSRFToken": "a"}),
        "/ajax-api/y": await fetch("ajax-api/y", {**jp_auth_header, **claims}),
        "/ajax-api/z?keep=1": await fetch(f"ajax-api/z?token={token}&keep=1", claims),
    }

    # Then the proxied server saw each request, but never the cookie, the token, the XSRF header, the page's
    # address or the client's claims (only the proxy's own prefix)
    for path, response in answers.items():
        seen = json.loads(response.body)
        headers = {k.lower(): v for k, v in seen["headers"].items()}
        assert seen["path"] == path
        assert not {"cookie", "authorization", "x-xsrftoken", "referer", "forwarded"} & set(headers), headers
        assert (
            token not in json.dumps(seen) and "evil" not in json.dumps(seen) and "203.0.113.9" not in json.dumps(seen)
        )
        assert {k for k in headers if k.startswith("x-forwarded-")} <= {"x-forwarded-context", "x-forwarded-prefix"}


async def test_an_anonymous_request_does_not_start_the_mlflow_ui(jp_serverapp, http_server_client, jp_base_url):
    # Given a server whose MLflow UI has not started
    ui = mlflow_ui(jp_serverapp)
    assert ui.started_at is None

    # When someone without a login asks for it: a page, a change, a websocket
    page = await http_server_client.fetch(
        url_path_join(jp_base_url, "mlflow/"), follow_redirects=False, raise_error=False
    )
    change = await http_server_client.fetch(
        url_path_join(jp_base_url, "mlflow", "ajax-api", "2.0", "mlflow", "experiments", "delete"),
        method="POST",
        body="{}",
        raise_error=False,
    )
    socket = await http_server_client.fetch(
        url_path_join(jp_base_url, "mlflow", "ws"),
        headers={"Upgrade": "websocket", "Connection": "Upgrade"},
        raise_error=False,
    )

    # Then each is sent to the login page or refused, and the UI was not started for them
    assert page.code == 302 and "/login" in page.headers["Location"]
    assert change.code == socket.code == 403
    assert ui.started_at is None and ui.server is None


async def test_run_links_survive_the_login_and_open_the_run_page(jp_fetch, http_server_client, jp_base_url, store):
    # Given a run in the server's store
    experiment_id = store.create_experiment("links-open")
    run_id = store.create_run(experiment_id, run_name="linked").info.run_id

    def get(path: str, **kwargs):
        return http_server_client.fetch(
            url_path_join(jp_base_url, path), follow_redirects=False, raise_error=False, **kwargs
        )

    # When the printed link is opened without a session, Then Jupyter's login comes first and keeps the link
    anonymous = await get(f"jupyter-air/runs/{run_id}/open")
    assert anonymous.code == 302
    location = anonymous.headers["Location"]
    assert "/login?next=" in location and f"jupyter-air%2Fruns%2F{run_id}%2Fopen" in location

    # When it is opened logged in, Then it redirects to the run's page in the proxied MLflow UI
    opened = await jp_fetch("jupyter-air", "runs", run_id, "open", follow_redirects=False, raise_error=False)
    assert opened.code == 302
    assert (
        opened.headers["Location"]
        == f"{jp_base_url}mlflow/#/experiments/{experiment_id}/runs/{run_id}?workflowType=machine_learning"
    )
    experiment = await jp_fetch(
        "jupyter-air", "experiments", experiment_id, "open", follow_redirects=False, raise_error=False
    )
    assert (
        experiment.headers["Location"]
        == f"{jp_base_url}mlflow/#/experiments/{experiment_id}?workflowType=machine_learning"
    )
    # And an unknown run says so
    unknown = await jp_fetch("jupyter-air", "runs", "0" * 32, "open", follow_redirects=False, raise_error=False)
    assert unknown.code == 404


@pytest.mark.usefixtures("no_orphans")
async def test_the_ui_starts_by_itself_once_the_store_exists(jp_serverapp, jp_fetch, store):
    # Given a server whose UI starts in the background (the store exists: the fixture created it)
    ui = mlflow_ui(jp_serverapp)
    autostart = UiAutostart(ui)
    autostart.start()
    try:
        # When nobody has asked for the MLflow UI yet, Then it starts (or is found running) and answers on its own
        await eventually(lambda: ui.ready_at is not None, timeout=300)
        started = ui.server
        # And the first run page is then answered by that same process, without starting another
        page = await jp_fetch("mlflow/", request_timeout=30)
        assert page.code == 200 and b"<title>MLflow</title>" in page.body
        assert ui.server == started

        # When that server is killed, Then the server starts it again, for the kernels' next calls
        os.kill(started.pid, signal.SIGKILL)
        await eventually(lambda: ui.server != started and ui.running, timeout=300)
        assert ui.server.answers()
    finally:
        autostart.stop()
