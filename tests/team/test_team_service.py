"""air-jobs as a real JupyterHub service on 127.0.0.1 (configurable-http-proxy in front): each request is answered
as the hub user whose token it carries, with their job permissions; users and groups are the hub's. Jobs submitted
through it are their submitter's, their logs kept by the service and not in MLflow; a user's Jupyter server
configured for it answers the Experiment panel's job routes from it, as its user."""

from __future__ import annotations

import json
import time

import psutil
import pytest
from team_calls import CREDENTIALS, PROBE, Listener, air, call, ended_job, finished, service, team_hub

from jupyter_air.workloads.surfaces.team_jobs import ServiceAnswer


@pytest.fixture(scope="module")
def team(tmp_path_factory):
    """The hub, its air-jobs service on a team job store and MLflow store, and alice's ended job with one line of
    output."""
    with team_hub(tmp_path_factory.mktemp("team")) as hub:
        job = ended_job(hub, "alice", "epoch 1 loss 0.42\n")
        hub.ready()
        yield hub, job, hub.tokens()


def test_bob_reads_alices_job_logs_only_once_she_grants_him_can_view(team):
    _, job, _ = team
    # Given alice's job: she sees it and its logs; bob's list is empty and he is refused its logs with whom to ask
    assert [j["job_run_id"] for j in call(team, "alice", "GET", "jobs")[1]["jobs"]] == [job]
    assert call(team, "alice", "GET", f"jobs/{job}/logs")[1]["text"] == "epoch 1 loss 0.42\n"
    assert call(team, "bob", "GET", "jobs")[1]["jobs"] == []
    status, denied = call(team, "bob", "GET", f"jobs/{job}/logs")
    assert status == 403
    assert denied["message"] == (
        f"You do not have permission to read the logs of job {job} (alice's). Ask a user with Can Manage permission "
        "on it, or an admin, to grant you at least Can View on the job."
    )
    # And he cannot grant himself access
    assert call(team, "bob", "PUT", f"jobs/{job}/permissions", {"user": "bob", "level": "CAN_VIEW"})[0] == 403

    # When alice grants bob CAN_VIEW
    status, granted = call(team, "alice", "PUT", f"jobs/{job}/permissions", {"user": "bob", "level": "CAN_VIEW"})

    # Then bob lists and reads the job, but may not cancel it; his level is CAN_VIEW
    assert status == 200 and [(g["user"], g["level"], g["granted_by"]) for g in granted["grants"]] == [
        ("bob", "CAN_VIEW", "alice")
    ]
    assert [j["job_run_id"] for j in call(team, "bob", "GET", "jobs")[1]["jobs"]] == [job]
    assert call(team, "bob", "GET", f"jobs/{job}/logs")[1]["text"] == "epoch 1 loss 0.42\n"
    assert call(team, "bob", "GET", f"jobs/{job}/permissions")[1]["your_level"] == "CAN_VIEW"
    status, refused = call(team, "bob", "POST", f"jobs/{job}/cancel")
    assert status == 403 and "grant you at least Can Manage Run on the job" in refused["message"]


def test_grants_name_the_hubs_users_and_groups(team):
    _, job, _ = team
    # When alice names a user or group the hub does not have, or a level that is not one: 400, nothing changed
    before = call(team, "alice", "GET", f"jobs/{job}/permissions")[1]
    for body, expected in [
        ({"user": "dave", "level": "CAN_VIEW"}, "no user 'dave' on this JupyterHub"),
        ({"group": "ops", "level": "CAN_VIEW"}, "no group 'ops' on this JupyterHub"),
        ({"user": "carol", "level": "IS_OWNER"}, "a job has one owner"),
    ]:
        status, refused = call(team, "alice", "PUT", f"jobs/{job}/permissions", body)
        assert status == 400 and expected in refused["message"], (body, refused)
    assert call(team, "alice", "GET", f"jobs/{job}/permissions")[1] == before
    # When carol, not granted herself, reads the logs: 403; once her group ml has CAN_VIEW: 200
    assert call(team, "carol", "GET", f"jobs/{job}/logs")[0] == 403
    assert call(team, "alice", "PUT", f"jobs/{job}/permissions", {"group": "ml", "level": "CAN_VIEW"})[0] == 200
    assert call(team, "carol", "GET", f"jobs/{job}/logs")[0] == 200
    # And the hub's admin may read any job; a request without a hub token is refused
    assert call(team, "hubadmin", "GET", f"jobs/{job}/logs")[0] == 200
    assert call(team, None, "GET", f"jobs/{job}/logs")[0] == 403


def test_alice_submits_through_the_service_and_her_logs_stay_out_of_mlflow(team, tmp_path):
    hub, _, _ = team
    # Given alice's workload file on the shared file system
    (tmp_path / "train.yaml").write_text(
        "experiment_name: team-submit\ncommand: echo epoch 1 loss 0.40\ncompute:\n  num_accelerators: 0\n"
    )
    alice, bob = service(team, "alice"), service(team, "bob")

    # When she submits it through the service (as her Jupyter server does), and it ends
    job = alice.submit(tmp_path, "train.yaml")
    deadline = time.monotonic() + 120
    while (ended := alice.get(job["job_run_id"]))["status"] in ("PENDING", "RUNNING"):
        assert time.monotonic() < deadline, ended
        time.sleep(0.3)

    # Then the job is hers and succeeded; the service serves its log to her and refuses bob
    assert (ended["user"], ended["status"], ended["source"]) == ("alice", "SUCCEEDED", str(tmp_path / "train.yaml"))
    assert alice.logs(job["job_run_id"], -1, 0, 0)["text"] == "epoch 1 loss 0.40\n"
    with pytest.raises(ServiceAnswer) as denied:
        bob.logs(job["job_run_id"], -1, 0, 0)
    assert denied.value.status == 403 and "Ask a user with Can Manage permission" in str(denied.value)
    # And the attempt's MLflow run ended FINISHED with no log among its artifacts: whoever reads the experiment
    # does not read the log
    from mlflow.tracking import MlflowClient

    client = MlflowClient(f"sqlite:///{hub.folder / 'mlflow.db'}")
    run = client.get_run(ended["attempts"][0]["mlflow_run_id"])
    assert run.info.status == "FINISHED" and client.list_artifacts(run.info.run_id) == []


def test_a_job_in_the_default_mode_finds_none_of_the_services_credentials_in_an_environment(team, tmp_path):
    hub, _, _ = team
    # Given the service in the default mode (jobs run as its own account), its MLflow admin password and Ray token in
    # its secrets file, JupyterHub's token for it in the environment the hub started it with
    (pid,) = [p.pid for p in psutil.Process(hub.process.pid).children() if "jupyter_air.team.service" in p.cmdline()]
    (tmp_path / "probe.yaml").write_text(
        f"experiment_name: team-env\ncommand: {json.dumps(PROBE)}\nenv_variables:\n  SERVICE_PID: '{pid}'\n"
        "compute:\n  num_accelerators: 0\n"
    )
    alice = service(team, "alice")

    # When alice's job prints its environment and reads /proc/<pid>/environ of the service and of its supervisor
    job = finished(alice, alice.submit(tmp_path, "probe.yaml"))
    log = alice.logs(job["job_run_id"], -1, 0, 0)["text"]

    # Then each was read, and none holds the MLflow password, the Ray token or the hub's token for the service
    assert job["status"] == "SUCCEEDED", (job, log)
    sections = dict(part.split("\n", 1) for part in log.split("#probe-")[1:])
    assert "JUPYTERHUB_SERVICE_NAME=air-jobs" in sections["service"], log
    assert "AIR_JOBS_SERVICE=1" in sections["supervisor"] and "SERVICE_PID=" in sections["job"], log
    for secret in (*CREDENTIALS.values(), "JUPYTERHUB_API_TOKEN=", "JPY_API_TOKEN=", "RAY_AUTH_TOKEN="):
        assert secret not in log, secret
    # And, as the docs say of the default mode, the job shares the service's account: its secrets file included
    assert sections["file"] == "read the secrets file\n", log


def test_a_workload_naming_a_ray_cluster_not_the_services_is_refused_before_any_connection(team, tmp_path):
    # Given bob's listener on 127.0.0.2, and workloads naming it as their Ray cluster (GCS or Ray Client address)
    listener = Listener()
    bob = service(team, "bob")
    before = bob.list(1000)
    try:
        for address in (listener.address, f"ray://{listener.address}"):
            (tmp_path / "ray.yaml").write_text(
                "experiment_name: team-ray\ncommand: 'true'\ncompute:\n  num_accelerators: 0\n"
                f"  ray_address: {address}\n"
            )
            # When bob sends one to the service
            with pytest.raises(ServiceAnswer) as refused:
                bob.submit(tmp_path, "ray.yaml")

            # Then it is refused, naming the field, its line and the fix
            assert refused.value.status == 400
            assert refused.value.errors[0].startswith("ray.yaml:5: compute.ray_address: "), refused.value.errors
            assert "has no Ray cluster" in refused.value.errors[0]
            assert "remove compute.ray_address" in refused.value.errors[0]
        time.sleep(1)
    finally:
        listener.close()
    # And the listener received nothing, and no job was made
    assert listener.connections == []
    assert bob.list(1000) == before


def test_a_bad_workload_sent_to_the_service_names_every_problem_and_creates_nothing(team, tmp_path):
    (tmp_path / "bad.yaml").write_text("experiment_name: team-bad\ncomand: true\n")
    bob = service(team, "bob")
    before = bob.list(1000)
    with pytest.raises(ServiceAnswer) as refused:
        bob.submit(tmp_path, "bad.yaml")
    assert refused.value.status == 400
    assert any("bad.yaml:2" in e and "did you mean 'command'" in e for e in refused.value.errors), refused.value.errors
    # And a local artifact folder, where the service would write for him, is refused
    (tmp_path / "local.yaml").write_text(
        "experiment_name: team-bad\ncommand: 'true'\nmlflow_artifact_location: out\ncompute:\n  num_accelerators: 0\n"
    )
    with pytest.raises(ServiceAnswer) as refused:
        bob.submit(tmp_path, "local.yaml")
    assert "takes a URI" in refused.value.errors[0]
    assert bob.list(1000) == before


@pytest.fixture
def air_config(team, monkeypatch) -> dict:
    """Bob's Jupyter server: configured for the team's job service, his hub token in its environment."""
    hub, _, tokens = team
    monkeypatch.setenv("JUPYTERHUB_API_TOKEN", tokens["bob"])
    monkeypatch.setenv("AIR_JOBS_URL", "")  # the setting below is what counts; restored after the test
    return {
        "gpu_source": "none",
        "mlflow_ui_autostart": False,
        "jobs_service_url": f"{hub.url}/services/air-jobs/",
    }


async def test_bobs_jupyter_server_answers_the_panels_job_routes_from_the_service_as_bob(team, jp_fetch):
    from tornado.httpclient import HTTPClientError

    hub, _, _ = team
    job = ended_job(hub, "alice", "epoch 3 loss 0.31\n")
    # Given alice's job; When bob's Logs view asks his server for its log, Then the service's refusal comes through
    with pytest.raises(HTTPClientError) as denied:
        await jp_fetch("jupyter-air", "jobs", job, "logs")
    assert denied.value.code == 403
    assert json.loads(denied.value.response.body)["message"] == (
        f"You do not have permission to read the logs of job {job} (alice's). Ask a user with Can Manage permission "
        "on it, or an admin, to grant you at least Can View on the job."
    )
    # And his job list (from the service) does not hold it
    listed = json.loads((await jp_fetch("jupyter-air", "jobs")).body)["jobs"]
    assert job not in [j["job_run_id"] for j in listed]

    # When alice grants him CAN_VIEW
    assert call(team, "alice", "PUT", f"jobs/{job}/permissions", {"user": "bob", "level": "CAN_VIEW"})[0] == 200

    # Then his server lists the job, reads and downloads its log, and says he may not cancel it
    listed = json.loads((await jp_fetch("jupyter-air", "jobs")).body)["jobs"]
    assert job in [j["job_run_id"] for j in listed]
    assert json.loads((await jp_fetch("jupyter-air", "jobs", job, "logs")).body)["text"] == "epoch 3 loss 0.31\n"
    download = await jp_fetch("jupyter-air", "jobs", job, "logs", "download")
    assert download.body == b"epoch 3 loss 0.31\n"
    assert download.headers["Content-Disposition"] == f'attachment; filename="{job}-attempt_0-node_0.log"'
    with pytest.raises(HTTPClientError) as refused:
        await jp_fetch("jupyter-air", "jobs", job, "cancel", method="POST", body=b"")
    assert refused.value.code == 403


def test_air_in_a_users_terminal_runs_and_reads_the_teams_jobs_as_that_user(team, tmp_path):
    hub, _, _ = team
    (tmp_path / "train.yaml").write_text(
        "experiment_name: team-cli\ncommand: echo step $STEP\nenv_variables:\n  STEP: '1'\n"
        "compute:\n  num_accelerators: 0\n"
    )
    # When alice runs a workload with `air run --watch` (an override on the way), Then it streams and succeeds
    ran = air(team, "alice", "run", "-f", "train.yaml", "--override", "env_variables.STEP=7", "--watch", cwd=tmp_path)
    assert ran.returncode == 0 and ran.stdout.splitlines()[-1] == "step 7", ran
    job = ran.stdout.splitlines()[0]
    # And it is hers on the service: `air list` and `air get` show it, with her name
    listed = json.loads(air(team, "alice", "list", "--all-status", "-o", "json").stdout)
    assert [(j["job_run_id"], j["user"], j["status"]) for j in listed][0] == (job, "alice", "SUCCEEDED")
    shown = air(team, "alice", "get", job).stdout
    assert "\nUser:              alice\n" in shown and "/services/air-jobs/" not in shown, shown
    # And her own AIR_HOME was never made
    assert not (hub.folder / "alice-own-air-home").exists()

    # When bob asks for its logs, Then he is refused with whom to ask (exit 1), and cannot grant himself
    refused = air(team, "bob", "logs", job)
    assert refused.returncode == 1 and "Ask a user with Can Manage permission on it" in refused.stderr
    assert air(team, "bob", "permissions", job, "--user", "bob", "--level", "CAN_VIEW").returncode == 1
    # When alice grants him CAN_VIEW with `air permissions`, Then he reads the log and may not cancel
    granted = air(team, "alice", "permissions", job, "--user", "bob", "--level", "CAN_VIEW")
    assert granted.returncode == 0 and "bob" in granted.stdout, granted
    assert air(team, "bob", "logs", job).stdout == "step 7\n"
    assert "your level: CAN_VIEW" in air(team, "bob", "permissions", job).stdout
    # And of alice's running job, bob (CAN_VIEW) may not cancel it; she may
    (tmp_path / "long.yaml").write_text(
        "experiment_name: team-cli\ncommand: sleep 60\ncompute:\n  num_accelerators: 0\n"
    )
    running = air(team, "alice", "run", "-f", "long.yaml", cwd=tmp_path).stdout.strip()
    assert air(team, "alice", "permissions", running, "--user", "bob", "--level", "CAN_VIEW").returncode == 0
    refused = air(team, "bob", "cancel", running)
    assert refused.returncode == 1 and "grant you at least Can Manage Run on the job" in refused.stderr, refused
    assert air(team, "alice", "cancel", running).stdout == f"{running}  CANCELED\n"
    # And bad input exits 2 and says what is wrong
    bad = air(team, "alice", "permissions", job, "--user", "dave", "--level", "CAN_VIEW")
    assert bad.returncode == 2 and "no user 'dave' on this JupyterHub" in bad.stderr
    (tmp_path / "typo.yaml").write_text("experiment_name: team-cli\ncomand: 'true'\n")
    typo = air(team, "alice", "run", "-f", "typo.yaml", cwd=tmp_path)
    assert typo.returncode == 2 and "typo.yaml:2" in typo.stderr, typo
    dry = air(team, "alice", "run", "-f", "train.yaml", "--dry-run", cwd=tmp_path)
    assert dry.returncode == 2 and "--dry-run: not with the team's job service (AIR_JOBS_URL)" in dry.stderr
