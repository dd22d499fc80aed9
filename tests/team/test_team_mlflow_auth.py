"""Hub users are MLflow users without a second password: a real `mlflow server --app-name basic-auth` whose
authorization function takes JupyterHub tokens (`jupyter_air.team.mlflow_auth`), against a real hub on 127.0.0.1.
alice makes an experiment with her hub token, and her notebook's distributed call tracks into her default experiment
as her; bob reads neither until alice shares it with `air share`. The hub's
air-jobs service, tracking there as its admin, logs a user's job only to an experiment they may log to."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from urllib.parse import quote

import nbformat
import pytest
from nbclient import NotebookClient
from notebook_helpers import outputs_text
from team_calls import hub_token
from tracking_servers import auth_tracking_server, create_user

from jupyter_air.team.stack import Hub, free_port
from jupyter_air.tracking.sharing import HUB_TOKENS
from jupyter_air.workloads.surfaces.team_jobs import ServiceAnswer, ServiceJobs

REPO_ROOT = str(Path(__file__).resolve().parents[2])
ADMIN_PASSWORD = "admin-password-7d1"
EXPERIMENT = "/Shared/team/resnet"


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    """The hub, users' tokens, and the tracking server that takes them."""
    folder = tmp_path_factory.mktemp("team-mlflow")
    (folder / "hub").mkdir()
    (folder / "mlflow").mkdir()
    port = free_port()
    # air-jobs tracks into the team's server as its admin (the password in its secrets file)
    service = {"AIR_HOME": str(folder / "air"), "MLFLOW_TRACKING_URI": f"http://127.0.0.1:{port}"}
    credentials = {"MLFLOW_TRACKING_USERNAME": "admin", "MLFLOW_TRACKING_PASSWORD": ADMIN_PASSWORD}
    hub = Hub(folder / "hub", service, credentials=credentials)
    try:
        hub.ready()
        environment = {"JUPYTERHUB_API_URL": f"{hub.url}/hub/api", "JUPYTERHUB_API_TOKEN": hub.mlflow_token}
        with auth_tracking_server(folder / "mlflow", ADMIN_PASSWORD, HUB_TOKENS, environment, port) as server:
            yield server.ready(), hub.tokens(), hub
    finally:
        hub.stop()


def request(uri: str, auth: str, method: str, path: str, body: dict | None = None) -> urllib.request.Request:
    """A request to MLflow's REST API as ``auth``."""
    return urllib.request.Request(
        uri + path,
        data=None if body is None else json.dumps(body).encode(),
        method=method,
        headers={"Authorization": auth, "Content-Type": "application/json"},
    )


def rest(uri: str, auth: str, method: str, path: str, body: dict | None = None) -> int:
    """The HTTP status of the request."""
    try:
        with urllib.request.urlopen(request(uri, auth, method, path, body), timeout=60) as response:
            return response.status
    except urllib.error.HTTPError as err:
        return err.code


def answer(uri: str, auth: str, method: str, path: str, body: dict | None = None) -> dict:
    """The JSON answer to the request."""
    with urllib.request.urlopen(request(uri, auth, method, path, body), timeout=60) as response:
        return json.load(response)


def names(uri: str, auth: str) -> set[str]:
    """The experiments a search as ``auth`` finds (MLflow's authentication app filters them by permission)."""
    found = answer(uri, auth, "POST", "/api/2.0/mlflow/experiments/search", {"max_results": 1000})
    return {e["name"] for e in found.get("experiments", [])}


def test_hub_tokens_are_mlflow_identities_and_air_share_works_with_them(stack):
    uri, tokens, _ = stack
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


def refusal(uri: str, auth: str, method: str, path: str, body: dict | None = None) -> tuple[int, str]:
    """The status and message of a refused request."""
    try:
        urllib.request.urlopen(request(uri, auth, method, path, body), timeout=60).close()
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read() or b"{}").get("message", "")
    return 200, ""


def test_a_hub_token_is_taken_only_for_a_user_made_for_the_hub_and_with_the_access_scope(stack):
    uri, tokens, hub = stack
    admin = "Basic " + base64.b64encode(f"admin:{ADMIN_PASSWORD}".encode()).decode()
    create, exists = "/api/2.0/mlflow/experiments/create", "/api/2.0/mlflow/experiments/get-by-name?experiment_name="
    # Given alice's unshared experiment, a user MLflow's admin made with a password (dave), and hub users named like
    # MLflow's admin and like dave, each with a hub token of their roles' scopes
    assert rest(uri, f"Bearer {tokens['alice']}", "POST", create, {"name": "/Users/alice/unshared"}) == 200
    create_user(uri, ADMIN_PASSWORD, "dave", "dave-mlflow-password-1")
    for name in ("admin", "dave"):
        token = f"Bearer {hub_token(hub, tokens['hubadmin'], name)}"

        # When their token reads alice's experiment or makes one, Then it is refused (403), saying why
        status, message = refusal(uri, token, "GET", f"{exists}/Users/alice/unshared")
        assert status == 403 and f"hub user {name!r} is not taken as MLflow's user of that name" in message
        assert refusal(uri, token, "POST", create, {"name": f"/Users/{name}/x"})[0] == 403
        assert refusal(uri, admin, "GET", f"{exists}/Users/{name}/x")[0] == 404

    # When bob's hub token without scopes (which air-jobs refuses) makes an experiment
    bare = f"Bearer {hub_token(hub, tokens['hubadmin'], 'bob', scopes=[])}"
    status, message = refusal(uri, bare, "POST", create, {"name": "/Users/bob/no-scope"})

    # Then it is refused, naming the scope it lacks, and nothing is made
    assert status == 403 and "lacks the scope access:services!service=mlflow" in message, message
    assert refusal(uri, admin, "GET", f"{exists}/Users/bob/no-scope")[0] == 404
    with pytest.raises(ServiceAnswer) as refused:
        ServiceJobs(f"{hub.url}/services/air-jobs/", bare.split()[1]).list(10)
    assert refused.value.status == 403
    # And MLflow's admin still signs in with its password, and dave with his
    assert rest(uri, admin, "GET", f"{exists}/Users/alice/unshared") == 200
    dave = "Basic " + base64.b64encode(b"dave:dave-mlflow-password-1").decode()
    assert rest(uri, dave, "POST", "/api/2.0/mlflow/experiments/search", {"max_results": 10}) == 200


def share_as(uri: str, token: str, experiment: str, user: str, level: str) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MLFLOW_")}
    env.update(MLFLOW_TRACKING_URI=uri, MLFLOW_TRACKING_TOKEN=token)
    command = [sys.executable, "-m", "jupyter_air.cli", "share", experiment, "--user", user, "--level", level]
    shared = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)
    assert shared.returncode == 0, shared.stderr


def ended(service: ServiceJobs, job: dict, timeout: float = 180) -> dict:
    """The job once it has ended (a bounded wait, not a speed assertion)."""
    deadline = time.monotonic() + timeout
    while (found := service.get(job["job_run_id"]))["status"] in ("PENDING", "RUNNING"):
        assert time.monotonic() < deadline, found
        time.sleep(0.3)
    return found


def test_the_job_service_logs_a_users_job_only_to_an_experiment_they_may_log_to(stack, tmp_path):
    uri, tokens, hub = stack
    alice, bob = (ServiceJobs(f"{hub.url}/services/air-jobs/", tokens[user]) for user in ("alice", "bob"))
    (tmp_path / "train.yaml").write_text(
        "experiment_name: /Users/alice/jobs\ncommand: echo trained\ncompute:\n  num_accelerators: 0\n"
    )
    # When alice sends a job to a new experiment, Then it is made as hers and the run (made by the service) is
    # in it: she reads it, bob does not
    job = ended(alice, alice.submit(tmp_path, "train.yaml"))
    assert job["status"] == "SUCCEEDED", job
    run = f"/api/2.0/mlflow/runs/get?run_id={job['attempts'][0]['mlflow_run_id']}"
    assert rest(uri, f"Bearer {tokens['alice']}", "GET", run) == 200
    assert rest(uri, f"Bearer {tokens['bob']}", "GET", run) == 403

    # When bob sends the same workload, logging to alice's experiment: refused with what to ask, nothing created
    before = len(bob.list(1000)["jobs"])
    with pytest.raises(ServiceAnswer) as refused:
        bob.submit(tmp_path, "train.yaml")
    assert refused.value.status == 400
    assert "bob may not log runs to experiment '/Users/alice/jobs'" in refused.value.errors[0]
    assert "air share /Users/alice/jobs --user bob --level EDIT" in refused.value.errors[0]
    assert len(bob.list(1000)["jobs"]) == before
    # And READ is not enough
    share_as(uri, tokens["alice"], "/Users/alice/jobs", "bob", "READ")
    with pytest.raises(ServiceAnswer, match=r"\(READ\)"):
        bob.submit(tmp_path, "train.yaml")

    # When alice gives him EDIT, Then his job runs and logs there
    share_as(uri, tokens["alice"], "/Users/alice/jobs", "bob", "EDIT")
    bobs = ended(bob, bob.submit(tmp_path, "train.yaml"))
    assert bobs["status"] == "SUCCEEDED", bobs

    # When bob, who may not share alice's experiment, gives carol CAN_VIEW on his job: the service asks the tracking
    # server as bob, which refuses, so neither grant is made
    with pytest.raises(ServiceAnswer, match="only the experiment's managers"):
        bob.grant(bobs["job_run_id"], "carol", None, "CAN_VIEW")
    assert bob.permissions(bobs["job_run_id"])["grants"] == []
    assert rest(uri, f"Bearer {tokens['carol']}", "GET", run) == 403


def test_alices_notebook_call_tracks_as_her_and_bob_reads_it_only_once_shared(stack, tmp_path, monkeypatch):
    uri, tokens, _ = stack
    alice, bob = (f"Bearer {tokens[user]}" for user in ("alice", "bob"))
    # Given alice's kernel as her hub server starts it: her name, the team's server, her hub token as MLflow token
    for name in [n for n in os.environ if n.startswith("MLFLOW_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("AIR_HOME", str(tmp_path / "air"))
    monkeypatch.setenv("JUPYTERHUB_USER", "alice")
    monkeypatch.setenv("JPY_SESSION_NAME", "work/churn model.ipynb")
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    monkeypatch.setenv("MLFLOW_TRACKING_TOKEN", tokens["alice"])
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [REPO_ROOT, os.environ.get("PYTHONPATH")])))
    remote = (
        "from jupyter_air import distributed\n"
        "@distributed(gpus=2)\n"
        "def evaluate(scale):\n"
        "    import os, mlflow\n"
        "    mlflow.log_metric('eval_ratio', 0.5)\n"
        "    return int(os.environ['RANK']) * scale\n"
        "evaluate.distributed(10, remote=True)"
    )
    cell = "%%air_distributed --gpus 2\nimport mlflow\nmlflow.log_metric('loss_ratio', 0.25)"
    notebook = nbformat.v4.new_notebook(
        cells=[nbformat.v4.new_code_cell(s) for s in ("%load_ext jupyter_air", cell, remote)]
    )

    # When her notebook's distributed cell runs on two ranks, and then a remote call (a job of her own AIR_HOME)
    NotebookClient(
        notebook, timeout=240, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    ).execute()

    # Then both runs are in her default experiment, FINISHED with the ranks' metrics (and logs), made as her
    assert "finished" in outputs_text(notebook.cells[1]), outputs_text(notebook.cells[1])
    experiment = "/Users/alice/churn model"
    assert notebook.cells[2].outputs[-1]["data"]["text/plain"] == "[0, 10]", outputs_text(notebook.cells[2])
    remote_run, run = runs(uri, alice, experiment)  # newest first
    assert run["info"]["status"] == "FINISHED" and run["info"]["user_id"] == "alice"
    assert remote_run["info"]["status"] == "FINISHED" and remote_run["info"]["user_id"] == "alice"
    assert {m["key"] for m in remote_run["data"]["metrics"]} >= {"eval_ratio"}
    assert {m["key"] for m in run["data"]["metrics"]} >= {"loss_ratio"}
    ranks = ["logs/node_0/rank_0.log", "logs/node_0/rank_1.log"]
    assert artifacts(uri, alice, run["info"]["run_id"]) == ranks
    # And bob neither finds the experiment nor reads a run, until alice shares it with him
    assert experiment not in names(uri, bob)
    assert rest(uri, bob, "GET", f"/api/2.0/mlflow/runs/get?run_id={run['info']['run_id']}") == 403
    share_as(uri, tokens["alice"], experiment, "bob", "READ")
    assert experiment in names(uri, bob)
    assert [r["info"]["run_id"] for r in runs(uri, bob, experiment)] == [
        remote_run["info"]["run_id"],
        run["info"]["run_id"],
    ]
    assert artifacts(uri, bob, run["info"]["run_id"]) == ranks


def runs(uri: str, auth: str, experiment: str) -> list[dict]:
    """The runs of ``experiment`` as ``auth`` reads them."""
    path = f"/api/2.0/mlflow/experiments/get-by-name?experiment_name={quote(experiment)}"
    found = answer(uri, auth, "GET", path)["experiment"]
    body = {"experiment_ids": [found["experiment_id"]]}
    return answer(uri, auth, "POST", "/api/2.0/mlflow/runs/search", body).get("runs", [])


def artifacts(uri: str, auth: str, run_id: str) -> list[str]:
    """The paths of the run's artifact files, up to three folders deep, as ``auth`` lists them through the server."""
    paths, folders = [], [""]
    for _ in range(3):
        found = []
        for folder in folders:
            path = f"/api/2.0/mlflow/artifacts/list?run_id={run_id}&path={quote(folder)}"
            for entry in answer(uri, auth, "GET", path).get("files", []):
                (found if entry["is_dir"] else paths).append(entry["path"])
        folders = found
    return sorted(paths)
