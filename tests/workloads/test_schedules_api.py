"""The schedules routes of the Experiment panel against a real Jupyter server and a real job store: what `air
schedules list` says plus each schedule's last job, pause and resume, run-now (refused while its job runs), and
names that need escaping or do not exist."""

from __future__ import annotations

import json
from urllib.parse import quote

import pytest
from tornado.httpclient import AsyncHTTPClient, HTTPClientError
from workload_helpers import write_workload

pytestmark = pytest.mark.local_store  # run links go through the Jupyter server's MLflow UI

SLEEP = "python -c 'import time; time.sleep(120)'"


@pytest.fixture
def api(jp_fetch, jp_http_port, jp_base_url, jp_auth_header):
    """GET or POST a schedules route with the server's token, the name percent-encoded as the panel sends it (a
    slash too: ``jp_fetch``, here only to start the server, would escape the escape), and decode its JSON."""

    async def fetch(name=None, action=None):
        url = f"http://localhost:{jp_http_port}{jp_base_url}jupyter-air/schedules"
        if name is not None:
            url += f"/{quote(name, safe='')}/{action}"
        method, body = ("POST", b"") if action else ("GET", None)
        response = await AsyncHTTPClient().fetch(url, method=method, body=body, headers=jp_auth_header)
        return json.loads(response.body)

    return fetch


async def refusal(api, *args):
    with pytest.raises(HTTPClientError) as error:
        await api(*args)
    return error.value.code, json.loads(error.value.response.body)["message"]


def schedule(air, tmp_path, name, command="python -c pass"):
    timing = {"quartz_cron_expression": "0 0 2 * * ?", "timezone_id": "America/Sao_Paulo"}
    air("run", "-f", str(write_workload(tmp_path, experiment_name=name, command=command, schedule=timing)), check=True)


async def test_schedules_are_what_air_schedules_list_says_plus_the_last_fire_and_its_job(api, air, tmp_path):
    # Given two schedules, none fired yet
    schedule(air, tmp_path, "nightly-eval")
    schedule(air, tmp_path, "team/nightly-train")

    # When the panel lists them
    listed = (await api())["schedules"]

    # Then it holds `air schedules list -o json`'s objects, by name, with no last fire or job yet
    cli = air.json("schedules", "list")
    assert [{k: s[k] for k in cli[0]} for s in listed] == cli
    assert [s["name"] for s in listed] == ["nightly-eval", "team/nightly-train"]
    assert all(s["last_fire"] is None and s["last_job"] is None for s in listed)


async def test_pause_resume_and_run_now_act_on_a_name_with_a_slash(api, air, tmp_path, jp_base_url):
    # Given a schedule named after an experiment with a slash, whose job runs for minutes
    name = "team/nightly-train"
    schedule(air, tmp_path, name, SLEEP)

    # When it is paused, run now while paused, run now again while its job runs, and resumed
    paused = await api(name, "pause")
    fired = await api(name, "run-now")
    busy = await refusal(api, name, "run-now")
    listed = (await api())["schedules"][0]
    resumed = await api(name, "resume")

    # Then pausing clears its next fire; the run-now starts one job, which the list shows as the last fire's job
    assert paused["pause_status"] == "PAUSED" and paused["next_fire_ms"] is None
    assert fired["fire"]["outcome"] == "SUBMITTED" and fired["fire"]["manual"] is True
    job_id = fired["job"]["job_run_id"]
    assert fired["fire"]["job_run_id"] == job_id and fired["job"]["status"] in ("PENDING", "RUNNING")
    assert listed["last_fire"]["job_run_id"] == job_id and listed["last_job"]["job_run_id"] == job_id
    # And a second run-now while that job runs is refused (409), naming the job and what to do
    assert busy[0] == 409 and job_id in busy[1] and "air cancel" in busy[1]
    # And resuming sets the next fire from its expression again, as the CLI shows it
    assert resumed["pause_status"] == "UNPAUSED" and resumed["next_fire_ms"] == resumed["next_fire_times_ms"][0]
    assert air.json("schedules", "get", name)["pause_status"] == "UNPAUSED"
    # And the job's attempt, once started, links to its run through this server
    started = air.wait(job_id, until=lambda job: job["attempts"] and job["attempts"][0]["mlflow_run_id"])
    run_id = started["attempts"][0]["mlflow_run_id"]
    last_job = (await api())["schedules"][0]["last_job"]
    assert last_job["attempts"][0]["url"] == f"{jp_base_url}jupyter-air/runs/{run_id}/open"


async def test_unknown_names_and_actions_are_refused_and_change_nothing(api, air, tmp_path):
    # Given one schedule
    schedule(air, tmp_path, "nightly-eval")

    # When a misspelled schedule is paused or run, and an unknown action is asked
    paused = await refusal(api, "nightly-evl", "pause")
    run = await refusal(api, "nightly-evl", "run-now")
    with pytest.raises(HTTPClientError) as action:
        await api("nightly-eval", "stop")

    # Then each is a 404 naming the schedule, and nothing fired or changed
    assert paused[0] == run[0] == 404 and "no schedule 'nightly-evl'" in paused[1] and "nightly-evl" in run[1]
    assert action.value.code == 404
    assert air.json("schedules", "get", "nightly-eval")["pause_status"] == "UNPAUSED"
    assert air.json("schedules", "get", "nightly-eval")["fires"] == []


async def test_run_on_a_workload_file_with_a_schedule_keeps_the_schedule_as_air_run_does(
    api, air, jp_fetch, jp_root_dir
):
    # Given a workload file with a schedule under the server's root
    timing = {"quartz_cron_expression": "0 0 2 * * ?", "timezone_id": "UTC", "pause_status": "PAUSED"}
    write_workload(jp_root_dir, "nightly.yaml", experiment_name="panel-nightly", command="true", schedule=timing)

    # When JupyterLab's Run submits it
    body = json.dumps({"path": "nightly.yaml"}).encode()
    answer = await jp_fetch("jupyter-air", "jobs", method="POST", body=body)

    # Then the schedule is created (201) as `air run -f` creates it, listed with the others, and no job started
    kept = json.loads(answer.body)
    assert answer.code == 201 and kept["created"] is True
    assert kept["schedule"] == air.json("schedules", "get", "panel-nightly")
    assert [(s["name"], s["pause_status"]) for s in (await api())["schedules"]] == [("panel-nightly", "PAUSED")]
    assert air.json("list", "--all-status") == []
    # And Run again updates it
    assert json.loads((await jp_fetch("jupyter-air", "jobs", method="POST", body=body)).body)["created"] is False
