"""The MLflow UI served through a real Jupyter server at {base_url}mlflow/, on the embedded store."""

from __future__ import annotations

import json

import psutil
import pytest

from jupyter_air.tracking.proxy import mlflow_server


@pytest.fixture
def jp_base_url():
    return "/user/alice/"


@pytest.fixture
def jp_server_config(store):
    return {
        "ServerApp": {"jpserver_extensions": {"jupyter_server_proxy": True}},
        "ServerProxy": {"servers": {"mlflow": mlflow_server()}},
    }


@pytest.fixture
def stop_proxied_servers():
    """Stop the proxied MLflow UI as Jupyter does when it exits (here the test process outlives the server)."""
    yield
    children = [p for p in psutil.Process().children() if "mlflow" in " ".join(p.cmdline())]
    for child in children:
        child.terminate()
    psutil.wait_procs(children, timeout=10)


@pytest.mark.usefixtures("no_orphans", "stop_proxied_servers")
async def test_run_link_opens_through_the_jupyter_server(jp_fetch, store):
    # Given a run in the embedded store
    experiment_id = store.create_experiment("proxy-<b>")
    run = store.create_run(experiment_id, run_name="proxied")

    # When the MLflow UI is opened under the server's base URL (started on first use)
    page = await jp_fetch("mlflow/", request_timeout=150)

    # Then it answers with MLflow's page, whose assets are relative so they load under the prefix
    assert page.code == 200 and b"<title>MLflow</title>" in page.body
    assert b'src="static-files/' in page.body
    # And the UI's own API, asked the way the browser asks it (POST from the page's origin), finds the run
    body = json.dumps({"experiment_ids": [experiment_id]})
    found = await jp_fetch("mlflow", "ajax-api", "2.0", "mlflow", "runs", "search", method="POST", body=body,
                           headers={"Origin": "https://hub.example.org", "Content-Type": "application/json"})
    runs = json.loads(found.body)["runs"]
    assert [r["info"]["run_id"] for r in runs] == [run.info.run_id]
