"""Runs on a real `mlflow server` over HTTP through MLflow's REST API, without MLflow in the process: its auth
variables, its artifact proxy, and its errors in MLflow's own words."""

from __future__ import annotations

import base64
import http.client
import json
import os
import pathlib
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from jupyter_air.tracking.entities import TrackingError

REPO = pathlib.Path(__file__).resolve().parents[2]
TOKEN, USER, PASSWORD = "s3cret-token", "alice", "pa:ss"

RUN_ON_SERVER = """
import pathlib, sys
from jupyter_air.tracking.lifecycle import ManagedRun
from jupyter_air.tracking.store import ensure_experiment

log = pathlib.Path(sys.argv[1])
with ManagedRun.create(ensure_experiment("rest-remote"), run_name=sys.argv[2], tags={"air.x": "1"},
                       params={"lr": 0.1}) as run:
    run.start_system_metrics()
    run.upload([log], "logs/node_0")
print(run.run_id, "mlflow" in sys.modules)
"""


@pytest.fixture(scope="module")
def guarded(served_tracking_uri):
    """The server behind a gate that lets through only MLflow's token or basic credentials (as a real deployment's
    authenticating proxy does); its http:// URI."""
    upstream = served_tracking_uri.removeprefix("http://")
    allowed = {f"Bearer {TOKEN}", "Basic " + base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()}

    class Gate(BaseHTTPRequestHandler):
        def _forward(self):
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            if self.headers.get("Authorization") not in allowed:
                status, data = 401, json.dumps({"error_code": "UNAUTHENTICATED", "message": "Missing credentials"})
                data = data.encode()
            else:
                connection = http.client.HTTPConnection(upstream, timeout=60)
                connection.request(self.command, self.path, body, {"Content-Type": "application/json"})
                answer = connection.getresponse()
                status, data = answer.status, answer.read()
                connection.close()
            self.send_response(status)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_POST = do_PUT = _forward

        def log_message(self, *args):
            pass

    gate = ThreadingHTTPServer(("127.0.0.1", 0), Gate)
    threading.Thread(target=gate.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{gate.server_address[1]}"
    gate.shutdown()


def _run_on(uri: str, log: pathlib.Path, name: str, **auth: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MLFLOW_")}
    env.update(MLFLOW_TRACKING_URI=uri, PYTHONPATH=str(REPO), **auth)
    return subprocess.run(
        [sys.executable, "-c", RUN_ON_SERVER, str(log), name], env=env, capture_output=True, text=True, timeout=300
    )


def test_runs_on_a_tracking_server_go_through_its_rest_api_with_mlflows_credentials(
    served_tracking_uri, guarded, tmp_path
):
    from mlflow.tracking import MlflowClient

    # Given a tracking server that wants credentials, and a log file to keep
    log = tmp_path / "rank_0.log"
    log.write_text("hello from rank 0\n")

    # When a fresh process makes a run there with a token, and another with a user name and password
    with_token = _run_on(guarded, log, "token", MLFLOW_TRACKING_TOKEN=TOKEN)
    with_password = _run_on(guarded, log, "password", MLFLOW_TRACKING_USERNAME=USER, MLFLOW_TRACKING_PASSWORD=PASSWORD)

    # Then both runs exist, ended, with their params, system metrics and the log, and MLflow was never imported
    client = MlflowClient(served_tracking_uri)
    for done, name in ((with_token, "token"), (with_password, "password")):
        assert done.returncode == 0, done.stderr
        run_id, imported = done.stdout.split()
        assert imported == "False"
        run = client.get_run(run_id)
        assert (run.info.run_name, run.info.status, run.data.params) == (name, "FINISHED", {"lr": "0.1"})
        assert run.data.tags["air.x"] == "1" and "system/cpu_utilization_percentage" in run.data.metrics
        assert run.info.artifact_uri.startswith("mlflow-artifacts:")
        local = client.download_artifacts(run_id, "logs/node_0/rank_0.log", str(tmp_path / name))
        assert pathlib.Path(local).read_text() == "hello from rank 0\n"

    # And without credentials the refusal reads as the server wrote it, and no run is made
    refused = _run_on(guarded, log, "anonymous")
    assert refused.returncode != 0
    assert "TrackingError: UNAUTHENTICATED: Missing credentials" in refused.stderr


def test_a_tracking_server_error_reads_as_in_mlflows_own_client(served_tracking_uri, store, monkeypatch):
    from mlflow.tracking import MlflowClient

    from jupyter_air.tracking.store import tracker
    from jupyter_air.training.runs import create_run

    # Given a run id that the tracking server does not know, to resume
    missing = "0" * 32
    monkeypatch.setenv("MLFLOW_TRACKING_URI", served_tracking_uri)
    monkeypatch.setenv("MLFLOW_RUN_ID", missing)

    # When it is read, Then the error is MLflow's own words, as MLflow's client says them
    with pytest.raises(TrackingError) as ours:
        tracker().get_run(missing)
    with pytest.raises(Exception) as theirs:
        MlflowClient(served_tracking_uri).get_run(missing)
    assert str(ours.value) == str(theirs.value) == f"RESOURCE_DOES_NOT_EXIST: Run with id={missing} not found"
    # And a call that resumes it says which variable named it, in which store, with the server's words
    with pytest.raises(TrackingError) as resumed:
        create_run(experiment=None, run_name=None, tags={})
    assert f"MLFLOW_RUN_ID={missing} names no run of {served_tracking_uri}" in str(resumed.value)
    assert str(theirs.value) in str(resumed.value)
