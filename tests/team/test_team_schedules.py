"""Schedules on a team's hub: a user's `air run -f` of a workload with a ``schedule:`` keeps it in air-jobs as theirs,
air-jobs fires it (its jobs are its owner's), and who may see, run, pause or delete it is what their grants on it
allow, in `air` and in their Jupyter server's panel routes alike."""

from __future__ import annotations

import json

import pytest
from team_calls import air, call, team_hub
from waiting import wait_for


@pytest.fixture(scope="module")
def team(tmp_path_factory):
    """The hub and its air-jobs service on an empty team job store."""
    with team_hub(tmp_path_factory.mktemp("team")) as hub:
        hub.ready()
        yield hub, None, hub.tokens()


def scheduled(name: str, expression: str, paused: bool = False) -> str:
    pause = "PAUSED" if paused else "UNPAUSED"
    return (
        f"experiment_name: {name}\ncommand: echo fired $AIR_JOB_RUN_ID\ncompute:\n  num_accelerators: 0\n"
        f"schedule:\n  quartz_cron_expression: '{expression}'\n  timezone_id: UTC\n  pause_status: {pause}\n"
    )


def succeeded(team, user: str, job: str) -> dict | None:
    """The job as ``user`` sees it once it has succeeded (None before)."""
    found = call(team, user, "GET", f"jobs/{job}")[1]
    return found if found["status"] == "SUCCEEDED" else None


def test_alices_schedule_is_kept_and_fired_by_the_service_and_bob_acts_on_it_only_as_granted(team, tmp_path):
    (tmp_path / "nightly.yaml").write_text(scheduled("team-nightly", "0 0 3 * * ?"))
    # When alice runs a workload with a schedule from her terminal
    made = air(team, "alice", "run", "-f", "nightly.yaml", cwd=tmp_path)

    # Then it is kept by the service as hers (nothing runs now), fired by the service, and only she sees it
    assert made.returncode == 0 and made.stdout.startswith("schedule team-nightly created: 0 0 3 * * ? (UTC)"), made
    assert "fires need a driver running: the team's job service fires it" in made.stderr
    listed = json.loads(air(team, "alice", "schedules", "list", "-o", "json").stdout)
    assert [(s["name"], s["user"], s["pause_status"]) for s in listed] == [("team-nightly", "alice", "UNPAUSED")]
    assert json.loads(air(team, "bob", "schedules", "list", "-o", "json").stdout) == []
    assert call(team, "alice", "GET", "jobs")[1]["jobs"] == []

    # When bob runs it now, or sends a workload of the same name: refused, with whom to ask; nothing changed
    refused = air(team, "bob", "schedules", "run-now", "team-nightly")
    assert refused.returncode == 1 and "grant you at least Can Manage Run" in refused.stderr, refused
    (tmp_path / "mine.yaml").write_text(scheduled("team-nightly", "*/10 * * * * ?"))
    taken = air(team, "bob", "run", "-f", "mine.yaml", cwd=tmp_path)
    assert taken.returncode == 1 and "schedule 'team-nightly' is alice's: only they can change" in taken.stderr
    assert json.loads(air(team, "alice", "schedules", "get", "team-nightly", "-o", "json").stdout)["user"] == "alice"

    # When alice grants him CAN_MANAGE_RUN on the schedule, Then he runs it now: a job of alice's, which he reads
    granted = air(team, "alice", "permissions", "team-nightly", "--user", "bob", "--level", "CAN_MANAGE_RUN")
    assert granted.returncode == 0 and "bob" in granted.stdout, granted
    ran = air(team, "bob", "schedules", "run-now", "team-nightly")
    assert ran.returncode == 0, ran
    job = ran.stdout.strip()
    ended = wait_for(lambda: succeeded(team, "bob", job), job)
    assert ended["user"] == "alice"
    assert air(team, "bob", "logs", job).stdout == f"fired {job}\n"
    # And `air list --schedule` shows him the jobs it fired, through the service
    fired = json.loads(air(team, "bob", "list", "--schedule", "team-nightly", "--all-status", "-o", "json").stdout)
    assert [(j["job_run_id"], j["schedule_name"]) for j in fired] == [(job, "team-nightly")]
    assert json.loads(air(team, "bob", "list", "--schedule", "other", "--all-status", "-o", "json").stdout) == []
    # But he may not pause or delete it; she may, and then it is gone
    assert air(team, "bob", "schedules", "pause", "team-nightly").returncode == 1
    assert air(team, "alice", "schedules", "pause", "team-nightly").stdout == "schedule team-nightly PAUSED\n"
    shown = air(team, "alice", "schedules", "get", "team-nightly").stdout
    assert "Status:" in shown and "PAUSED" in shown and f"SUBMITTED  {job}" in shown, shown
    assert air(team, "bob", "schedules", "delete", "team-nightly").returncode == 1
    assert air(team, "alice", "schedules", "delete", "team-nightly").returncode == 0
    assert json.loads(air(team, "alice", "schedules", "list", "-o", "json").stdout) == []
    # And `air scheduler` and --watch on a schedule say why not (exit 2)
    assert "the service fires the team's schedules" in air(team, "alice", "scheduler").stderr
    watched = air(team, "alice", "run", "-f", "nightly.yaml", "--watch", cwd=tmp_path)
    assert watched.returncode == 2 and "drop --watch" in watched.stderr
    assert json.loads(air(team, "alice", "schedules", "list", "-o", "json").stdout) == []


def test_the_service_fires_a_due_schedule_as_its_owners_job(team, tmp_path):
    (tmp_path / "often.yaml").write_text(scheduled("team-often", "*/10 * * * * ?"))
    # Given alice's schedule due every 10 s
    assert air(team, "alice", "run", "-f", "often.yaml", cwd=tmp_path).returncode == 0
    try:
        # When the service's check comes round, Then it fires a job of alice's, which succeeds
        def fired():
            fires = json.loads(air(team, "alice", "schedules", "get", "team-often", "-o", "json").stdout)["fires"]
            return next((f["job_run_id"] for f in fires if f["outcome"] == "SUBMITTED"), None)

        job = wait_for(fired, "a fire of team-often")
        ended = wait_for(lambda: succeeded(team, "alice", job), job)
        assert ended["user"] == "alice" and ended["experiment_name"] == "team-often"
    finally:
        air(team, "alice", "schedules", "delete", "team-often")


@pytest.fixture
def air_config(team, monkeypatch) -> dict:
    """Bob's Jupyter server: configured for the team's job service, his hub token in its environment."""
    hub, _, tokens = team
    monkeypatch.setenv("JUPYTERHUB_API_TOKEN", tokens["bob"])
    monkeypatch.setenv("AIR_JOBS_URL", "")  # the setting below is what counts; restored after the test
    return {"gpu_source": "none", "mlflow_ui_autostart": False, "jobs_service_url": f"{hub.url}/services/air-jobs/"}


async def test_bobs_panel_shows_the_teams_schedules_he_may_see(team, tmp_path, jp_fetch, jp_root_dir):
    from tornado.httpclient import HTTPClientError

    (tmp_path / "weekly.yaml").write_text(scheduled("team-weekly", "0 0 4 ? * MON", paused=True))
    assert air(team, "alice", "run", "-f", "weekly.yaml", cwd=tmp_path).returncode == 0
    # Given alice's schedule: bob's panel does not list it
    assert json.loads((await jp_fetch("jupyter-air", "schedules")).body)["schedules"] == []
    # When she grants him CAN_VIEW, Then it does, and his Run now is refused with whom to ask
    assert air(team, "alice", "permissions", "team-weekly", "--user", "bob", "--level", "CAN_VIEW").returncode == 0
    listed = json.loads((await jp_fetch("jupyter-air", "schedules")).body)["schedules"]
    assert [(s["name"], s["user"], s["pause_status"]) for s in listed] == [("team-weekly", "alice", "PAUSED")]
    with pytest.raises(HTTPClientError) as refused:
        await jp_fetch("jupyter-air", "schedules", "team-weekly", "run-now", method="POST", body=b"")
    assert refused.value.code == 403
    assert "Can Manage Run" in json.loads(refused.value.response.body)["message"]

    # When bob runs a scheduled workload file of his own from JupyterLab, Then the service keeps it as his
    (jp_root_dir / "bobs.yaml").write_text(scheduled("team-bobs", "0 0 5 * * ?", paused=True))
    answer = await jp_fetch("jupyter-air", "jobs", method="POST", body=json.dumps({"path": "bobs.yaml"}).encode())
    kept = json.loads(answer.body)
    assert answer.code == 201 and kept["created"] is True and kept["schedule"]["user"] == "bob"
    listed = json.loads((await jp_fetch("jupyter-air", "schedules")).body)["schedules"]
    assert [s["name"] for s in listed] == ["team-bobs", "team-weekly"]
