"""`air share`: experiment permissions on a real `mlflow server --app-name basic-auth` over HTTP (127.0.0.1), with
the server's default permission NO_PERMISSIONS, as a team's shared server runs."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import urllib.error
import urllib.request

import pytest
from tornado.httpclient import HTTPClientError
from tracking_servers import auth_tracking_server, create_user

PASSWORDS = {"admin": "admin-password-9f3", "alice": "alice-password-2c7", "bob": "bob-password-5e1"}
EXPERIMENT = "/Shared/vision/resnet"


def _rest(uri: str, user: str, method: str, path: str, body: dict | None = None) -> tuple[int, dict | str]:
    """One request to the server as ``user``: (status, JSON answer or text)."""
    token = base64.b64encode(f"{user}:{PASSWORDS[user]}".encode()).decode()
    request = urllib.request.Request(
        uri + path,
        data=None if body is None else json.dumps(body).encode(),
        method=method,
        headers={"Authorization": f"Basic {token}", "Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=60) as answer:
            status, text = answer.status, answer.read().decode()
    except urllib.error.HTTPError as err:
        status, text = err.code, err.read().decode()
    try:
        return status, json.loads(text)
    except ValueError:
        return status, text


@pytest.fixture(scope="module")
def auth_server(tmp_path_factory):
    """The server, with users alice and bob, and alice's experiment (she manages it as its creator)."""
    folder = tmp_path_factory.mktemp("auth-server")
    with auth_tracking_server(folder, PASSWORDS["admin"]) as server:
        uri = server.ready()
        for user in ("alice", "bob"):
            create_user(uri, PASSWORDS["admin"], user, PASSWORDS[user])
        status, _ = _rest(uri, "alice", "POST", "/api/2.0/mlflow/experiments/create", {"name": EXPERIMENT})
        assert status == 200
        yield uri


def _air_share(uri: str | None, user: str, *args: str, home=None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MLFLOW_")}
    if uri:
        env.update(MLFLOW_TRACKING_URI=uri, MLFLOW_TRACKING_USERNAME=user, MLFLOW_TRACKING_PASSWORD=PASSWORDS[user])
    if home is not None:
        env["AIR_HOME"] = str(home)
    command = [sys.executable, "-m", "jupyter_air.cli", "share", *args]
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)


def _bob_reads(uri: str) -> int:
    return _rest(uri, "bob", "GET", f"/api/2.0/mlflow/experiments/get-by-name?experiment_name={EXPERIMENT}")[0]


def _bob_logs(uri: str) -> int:
    status, found = _rest(uri, "alice", "GET", f"/api/2.0/mlflow/experiments/get-by-name?experiment_name={EXPERIMENT}")
    experiment_id = found["experiment"]["experiment_id"]
    return _rest(uri, "bob", "POST", "/api/2.0/mlflow/runs/create", {"experiment_id": experiment_id})[0]


def test_the_owner_shares_an_experiment_read_then_edit_then_takes_it_back(auth_server):
    # Given alice's experiment, which bob can neither read nor log to (the server grants nothing by default)
    assert (_bob_reads(auth_server), _bob_logs(auth_server)) == (403, 403)

    # When alice shares it with bob to read
    done = _air_share(auth_server, "alice", EXPERIMENT, "--user", "bob", "--level", "read")
    # Then it says so, and bob can read it but not log to it
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"bob can now read experiment {EXPERIMENT!r} (READ) on {auth_server}"
    assert (_bob_reads(auth_server), _bob_logs(auth_server)) == (200, 403)

    # When she raises it to EDIT (a grant bob already has is replaced), Then bob can log runs there
    done = _air_share(auth_server, "alice", EXPERIMENT, "--user", "bob", "--level", "EDIT", "-o", "json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {
        "experiment_name": EXPERIMENT,
        "experiment_id": json.loads(done.stdout)["experiment_id"],
        "user": "bob",
        "level": "EDIT",
        "server": auth_server,
    }
    assert (_bob_reads(auth_server), _bob_logs(auth_server)) == (200, 200)

    # When she takes it back, Then bob is refused again
    done = _air_share(auth_server, "alice", EXPERIMENT, "--user", "bob", "--revoke")
    assert done.returncode == 0, done.stderr and "lost their grant" in done.stdout
    assert _bob_reads(auth_server) == 403


def test_refusals_say_why_in_mlflows_words_and_bad_input_exits_2(auth_server, tmp_path):
    # When bob, who cannot manage alice's experiment, tries to share it: 1, with the server's refusal explained
    denied = _air_share(auth_server, "bob", EXPERIMENT, "--user", "bob", "--level", "MANAGE")
    assert denied.returncode == 1 and "403" in denied.stderr and "managers" in denied.stderr
    assert _bob_reads(auth_server) == 403

    # When the user or the experiment does not exist, or the level is not one: 2, naming what is wrong
    no_user = _air_share(auth_server, "alice", EXPERIMENT, "--user", "carol", "--level", "READ")
    assert no_user.returncode == 2 and "carol" in no_user.stderr and "admin" in no_user.stderr
    no_experiment = _air_share(auth_server, "alice", "/Shared/none", "--user", "bob", "--level", "READ")
    assert no_experiment.returncode == 2 and "no experiment '/Shared/none'" in no_experiment.stderr
    bad_level = _air_share(auth_server, "alice", EXPERIMENT, "--user", "bob", "--level", "OWNER")
    assert bad_level.returncode == 2 and "READ" in bad_level.stderr and "MANAGE" in bad_level.stderr

    # When the session tracks into the embedded store: 2, saying what a shared server needs; nothing is created
    home = tmp_path / "air"
    local = _air_share(None, "alice", EXPERIMENT, "--user", "bob", "--level", "READ", home=home)
    assert local.returncode == 2 and "--app-name basic-auth" in local.stderr and "MLFLOW_TRACKING_URI" in local.stderr
    assert not home.exists()


async def _share_route(jp_fetch, experiment, user, level) -> dict:
    body = json.dumps({"experiment": experiment, "user": user, "level": level})
    return json.loads((await jp_fetch("jupyter-air", "experiments", "share", method="POST", body=body)).body)


async def _refused(jp_fetch, experiment, user, level) -> tuple[int, str]:
    with pytest.raises(HTTPClientError) as caught:
        await _share_route(jp_fetch, experiment, user, level)
    return caught.value.code, json.loads(caught.value.response.body)["message"]


async def test_the_panels_route_shares_with_the_servers_credentials_and_says_why_not(
    auth_server, jp_fetch, monkeypatch
):
    # Given a Jupyter server whose tracking server is the team's, as alice
    monkeypatch.setenv("MLFLOW_TRACKING_URI", auth_server)
    monkeypatch.setenv("MLFLOW_TRACKING_USERNAME", "alice")
    monkeypatch.setenv("MLFLOW_TRACKING_PASSWORD", PASSWORDS["alice"])

    # When the panel asks whether it can share, Then it can, on that server
    info = json.loads((await jp_fetch("jupyter-air", "experiments", "share")).body)
    assert info == {"available": True, "server": auth_server, "reason": None}

    # When it gives bob EDIT, then takes it back, Then bob can log runs, then cannot even read
    grant = await _share_route(jp_fetch, EXPERIMENT, "bob", "EDIT")
    assert (grant["user"], grant["level"], grant["experiment_name"]) == ("bob", "EDIT", EXPERIMENT)
    assert _bob_logs(auth_server) == 200
    assert (await _share_route(jp_fetch, EXPERIMENT, "bob", None))["level"] is None
    assert _bob_reads(auth_server) == 403

    # When the user is unknown or the level is not one: 400 naming it; when the tracking server refuses: 502
    assert (await _refused(jp_fetch, EXPERIMENT, "carol", "READ"))[0] == 400
    code, message = await _refused(jp_fetch, EXPERIMENT, "bob", "OWNER")
    assert code == 400 and "'OWNER'" in message
    monkeypatch.setenv("MLFLOW_TRACKING_USERNAME", "bob")
    monkeypatch.setenv("MLFLOW_TRACKING_PASSWORD", PASSWORDS["bob"])
    code, message = await _refused(jp_fetch, EXPERIMENT, "bob", "MANAGE")
    assert code == 502 and "403" in message

    # When the server tracks into the embedded store, Then sharing is not offered, and a POST says why
    monkeypatch.delenv("MLFLOW_TRACKING_URI")
    info = json.loads((await jp_fetch("jupyter-air", "experiments", "share")).body)
    assert info["available"] is False and "--app-name basic-auth" in info["reason"]
    assert (await _refused(jp_fetch, EXPERIMENT, "bob", "READ"))[0] == 400


def test_a_job_grant_gives_the_matching_experiment_grant_and_a_refused_one_changes_nothing(
    auth_server, tmp_path, monkeypatch
):
    from jupyter_air.tracking.sharing import ShareError
    from jupyter_air.workloads.jobs.jobs import Jobs
    from jupyter_air.workloads.state.permissions import Caller
    from jupyter_air.workloads.surfaces.access import Access

    class Team:  # the users a hub would know
        def has_user(self, name):
            return name in ("alice", "bob", "carol")

        def has_group(self, name):
            return False

    # Given alice's job whose runs go to the team's tracking server, as alice's session sees it
    monkeypatch.setenv("MLFLOW_TRACKING_URI", auth_server)
    monkeypatch.setenv("MLFLOW_TRACKING_USERNAME", "alice")
    monkeypatch.setenv("MLFLOW_TRACKING_PASSWORD", PASSWORDS["alice"])
    jobs = Jobs(tmp_path / "air", Caller("alice"), Team())
    workload = {"experiment_name": EXPERIMENT, "compute": {"num_accelerators": 0}, "max_retries": 0}
    job = jobs.store.create_job(workload, "w.yaml", "alice", "local", auth_server).job_run_id
    assert _bob_reads(auth_server) == 403

    # When alice gives bob CAN_VIEW on the job, Then bob can read the experiment too (READ), not log to it
    answer = Access(jobs).grant(job, user="bob", level="CAN_VIEW")
    assert answer["experiment_grant"] == f"bob can now read experiment {EXPERIMENT!r} (READ) on {auth_server}"
    assert (_bob_reads(auth_server), _bob_logs(auth_server)) == (200, 403)
    # When she raises it to CAN_MANAGE_RUN, Then bob can log runs there (EDIT)
    Access(jobs).grant(job, user="bob", level="CAN_MANAGE_RUN")
    assert _bob_logs(auth_server) == 200

    # When the tracking server refuses the experiment grant (carol has no MLflow account), Then the job grant is
    # not made either
    with pytest.raises(ShareError):
        Access(jobs).grant(job, user="carol", level="CAN_VIEW")
    assert [g["user"] for g in Access(jobs).list(job)["grants"]] == ["bob"]

    # When she takes bob's job grant back, Then his experiment grant stays (`air share --revoke` takes it)
    answer = Access(jobs).grant(job, user="bob")
    assert answer["grants"] == [] and "air share --revoke" in answer["experiment_grant"]
    assert _bob_reads(auth_server) == 200
    _air_share(auth_server, "alice", EXPERIMENT, "--user", "bob", "--revoke")
    assert _bob_reads(auth_server) == 403
