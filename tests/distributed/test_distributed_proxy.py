"""The MLflow UI served through a real Jupyter server at {base_url}mlflow/, on the embedded store."""

from __future__ import annotations

import json

import pytest
from jupyter_server.utils import url_path_join

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
        "JupyterAir": {"gpu_source": "none"},
    }


@pytest.fixture
def stop_proxied_servers(jp_serverapp, jp_asyncio_loop):
    """Stop the proxied MLflow UI as Jupyter does when it exits (here the test process outlives the server),
    through its supervisor: one killed behind its back that exits with an error code is started again."""
    yield
    routes = [rule for host in jp_serverapp.web_app.default_router.rules for rule in getattr(host.target, "rules", [])]
    for route in routes:
        process = route.target_kwargs.get("state", {}).get("proc")
        if process is not None and process.running:
            jp_asyncio_loop.run_until_complete(process.terminate())


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
            url_path_join(jp_base_url, "mlflow", "ajax-api", "2.0", "mlflow", path), method=method,
            body=None if body is None else json.dumps(body), headers=headers, raise_error=False,
        )

    return fetch


@pytest.mark.usefixtures("no_orphans", "stop_proxied_servers")
async def test_run_link_opens_through_the_jupyter_server_and_refuses_cross_site_changes(jp_fetch, store, browser):
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
    # And the launcher tile opens that same address
    tiles = json.loads(servers.body)["server_processes"]
    assert [(t["name"], t["launcher_entry"]["path_info"]) for t in tiles] == [("mlflow", "mlflow/")]
    # And the UI's own API, asked as the browser asks it (POST from the page's origin), finds the run
    found = await browser(cookie, "runs/search", search)
    assert found.code == 200
    assert [r["info"]["run_id"] for r in json.loads(found.body)["runs"]] == [run.info.run_id]

    # When a page on another site makes that browser delete the experiment
    attack = await browser(cookie, "experiments/delete", {"experiment_id": experiment_id},
                           origin="http://evil.example")

    # Then Jupyter refuses it before MLflow sees it, and the experiment is still there
    assert attack.code == 403
    assert store.get_experiment(experiment_id).lifecycle_stage == "active"
    # While a trusted origin (ServerApp.allow_origin), a script with a token and a GET without Origin still get in
    trusted = await browser(cookie, "runs/search", search, origin=TRUSTED_ORIGIN)
    scripted = await jp_fetch("mlflow", "ajax-api", "2.0", "mlflow", "runs", "search", method="POST",
                              body=json.dumps(search),
                              headers={"Origin": "https://elsewhere.example", "Content-Type": "application/json"})
    read = await browser(cookie, f"experiments/get?experiment_id={experiment_id}", origin=None)
    assert trusted.code == scripted.code == read.code == 200
    assert json.loads(read.body)["experiment"]["name"] == "proxy-<b>"
    # And a change from the page's own origin goes through
    rename = {"experiment_id": experiment_id, "new_name": "proxy-kept"}
    renamed = await browser(cookie, "experiments/update", rename)
    assert renamed.code == 200 and store.get_experiment(experiment_id).name == "proxy-kept"
