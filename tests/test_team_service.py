"""air-jobs as a real JupyterHub service on 127.0.0.1 (configurable-http-proxy in front): each request is answered
as the hub user whose token it carries, with their job permissions; users and groups are the hub's."""

from __future__ import annotations

import json
import urllib.error
import urllib.request

import pytest

from jupyter_air.team.stack import Hub
from jupyter_air.workloads.jobs import Jobs
from jupyter_air.workloads.logs import OUTPUT, node_dir


@pytest.fixture(scope="module")
def team(tmp_path_factory):
    """The hub, its air-jobs service on a team job store, and alice's ended job with one line of output."""
    folder = tmp_path_factory.mktemp("team")
    home, uri = folder / "air", f"sqlite:///{folder / 'mlflow.db'}"
    hub = Hub(folder, {"AIR_HOME": str(home), "MLFLOW_TRACKING_URI": uri})
    try:
        store = Jobs(home).store
        workload = {"experiment_name": "team-exp", "command": "true", "compute": {"num_accelerators": 0}}
        job = store.create_job({**workload, "max_retries": 0}, "w.yaml", "alice", "local", uri).job_run_id
        store.start_attempt(job, 0, "0123456789abcdef", None)
        log = node_dir(store.job_dir(job), 0, 0)
        log.mkdir(parents=True)
        (log / OUTPUT).write_text("epoch 1 loss 0.42\n")
        store.update_attempt(job, 0, status="FINISHED", ended_ms=1)
        store.finish(job, "SUCCEEDED")
        hub.ready()
        yield hub, job, hub.tokens()
    finally:
        hub.stop()


def call(team, user: str | None, method: str, path: str, body: dict | None = None) -> tuple[int, dict]:
    hub, _, tokens = team
    request = urllib.request.Request(
        f"{hub.url}/services/air-jobs/{path}",
        data=None if body is None else json.dumps(body).encode(),
        method=method,
        headers={"Authorization": f"token {tokens[user]}"} if user else {},
    )
    try:
        with urllib.request.urlopen(request, timeout=60) as answer:
            return answer.status, json.load(answer)
    except urllib.error.HTTPError as err:
        text = err.read().decode()
        try:
            return err.code, json.loads(text)
        except ValueError:
            return err.code, {"text": text}


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
