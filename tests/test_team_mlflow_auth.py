"""Hub users are MLflow users without a second password: a real `mlflow server --app-name basic-auth` whose
authorization function takes JupyterHub tokens (`jupyter_air.team.mlflow_auth`), against a real hub on 127.0.0.1.
alice makes an experiment with her hub token, bob cannot read it until alice shares it with `air share`."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import urllib.error
import urllib.request

import pytest
from tracking_servers import auth_tracking_server

from jupyter_air.team.stack import Hub

ADMIN_PASSWORD = "admin-password-7d1"
EXPERIMENT = "/Shared/team/resnet"


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    """The hub, users' tokens, and the tracking server that takes them."""
    folder = tmp_path_factory.mktemp("team-mlflow")
    (folder / "hub").mkdir()
    (folder / "mlflow").mkdir()
    hub = Hub(folder / "hub", {"AIR_HOME": str(folder / "air")})
    try:
        hub.ready()
        environment = {"JUPYTERHUB_API_URL": f"{hub.url}/hub/api", "JUPYTERHUB_API_TOKEN": hub.mlflow_token}
        function = "jupyter_air.team.mlflow_auth:authenticate_request_hub_token"
        with auth_tracking_server(folder / "mlflow", ADMIN_PASSWORD, function, environment) as server:
            yield server.ready(), hub.tokens()
    finally:
        hub.stop()


def rest(uri: str, auth: str, method: str, path: str, body: dict | None = None) -> int:
    request = urllib.request.Request(
        uri + path,
        data=None if body is None else json.dumps(body).encode(),
        method=method,
        headers={"Authorization": auth, "Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=60) as answer:
            return answer.status
    except urllib.error.HTTPError as err:
        return err.code


def names(uri: str, auth: str) -> set[str]:
    """The experiments a search as ``auth`` finds (MLflow's authentication app filters them by permission)."""
    request = urllib.request.Request(
        uri + "/api/2.0/mlflow/experiments/search",
        data=json.dumps({"max_results": 1000}).encode(),
        method="POST",
        headers={"Authorization": auth, "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=60) as answer:
        return {e["name"] for e in json.load(answer).get("experiments", [])}


def test_hub_tokens_are_mlflow_identities_and_air_share_works_with_them(stack):
    uri, tokens = stack
    bearer = {user: f"Bearer {token}" for user, token in tokens.items()}
    read = f"/api/2.0/mlflow/experiments/get-by-name?experiment_name={EXPERIMENT}"

    # When alice makes an experiment with her hub token (no MLflow password anywhere), Then she can, and reads it
    assert rest(uri, bearer["alice"], "POST", "/api/2.0/mlflow/experiments/create", {"name": EXPERIMENT}) == 200
    assert rest(uri, bearer["alice"], "GET", read) == 200
    private = {"name": "/Users/alice/private"}
    assert rest(uri, bearer["alice"], "POST", "/api/2.0/mlflow/experiments/create", private) == 200
    assert {EXPERIMENT, private["name"]} <= names(uri, bearer["alice"])
    # And bob, a hub user too, cannot read it; a token the hub does not know is refused as unauthenticated
    assert rest(uri, bearer["bob"], "GET", read) == 403
    assert not {EXPERIMENT, private["name"]} & names(uri, bearer["bob"])
    assert rest(uri, "Bearer not-a-hub-token", "GET", read) == 401

    # When alice shares it with bob through `air share`, with her hub token as MLFLOW_TRACKING_TOKEN
    env = {k: v for k, v in os.environ.items() if not k.startswith("MLFLOW_")}
    env.update(MLFLOW_TRACKING_URI=uri, MLFLOW_TRACKING_TOKEN=tokens["alice"])
    command = [sys.executable, "-m", "jupyter_air.cli", "share", EXPERIMENT, "--user", "bob", "--level", "READ"]
    shared = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)

    # Then bob reads it; carol, with whom nothing was shared, still cannot
    assert shared.returncode == 0, shared.stderr
    assert rest(uri, bearer["bob"], "GET", read) == 200
    assert rest(uri, bearer["carol"], "GET", read) == 403
    # And bob's search finds the shared experiment, never alice's unshared one
    found = names(uri, bearer["bob"])
    assert EXPERIMENT in found and private["name"] not in found
    # And MLflow's own admin still signs in with its password
    admin = "Basic " + base64.b64encode(f"admin:{ADMIN_PASSWORD}".encode()).decode()
    assert rest(uri, admin, "GET", read) == 200
