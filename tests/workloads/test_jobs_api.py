"""The jobs routes of the Experiment panel against a real Jupyter server and real `air` jobs: what `air list` and
`air get` say, logs followed by byte offset while they grow, cancel, bad ids, attempts, nodes and offsets, and one
job model per server. Submitting from JupyterLab: test_jobs_submit_api."""

from __future__ import annotations

import asyncio
import json
import textwrap

import pytest
from tornado.httpclient import AsyncHTTPClient, HTTPClientError
from workload_helpers import write_workload

from jupyter_air.workloads.state.logs import OUTPUT, node_dir

pytestmark = pytest.mark.local_store  # run links go through the Jupyter server's MLflow UI


@pytest.fixture
def api(jp_fetch):
    """GET (or POST) a jobs route and decode its JSON."""

    async def fetch(*parts, method="GET", **params):
        body = b"" if method == "POST" else None
        params = {k: str(v) for k, v in params.items()}
        response = await jp_fetch("jupyter-air", "jobs", *parts, method=method, body=body, params=params)
        return json.loads(response.body)

    return fetch


@pytest.fixture
def refused(jp_fetch):
    """The status and message of a jobs route that refuses the request."""

    async def fetch(*parts, method="GET", **params):
        body = b"" if method == "POST" else None
        with pytest.raises(HTTPClientError) as error:
            await jp_fetch("jupyter-air", "jobs", *parts, method=method, body=body, params=params)
        return error.value.code, json.loads(error.value.response.body)["message"]

    return fetch


def script(tmp_path, name: str, body: str) -> str:
    path = tmp_path / name
    path.write_text(textwrap.dedent(body))
    return f"python {path}"


async def test_jobs_are_what_air_list_and_air_get_say_plus_attempt_links(api, air, tmp_path, jp_base_url):
    # Given a job that ran and ended
    job_id = air.submit(write_workload(tmp_path, experiment_name="panel-jobs", command="echo done"))
    air.wait(job_id)
    # When the panel lists the jobs and reads the one
    listed = (await api())["jobs"]
    detail = await api(job_id)
    # Then the list holds `air list --all-status -o json`'s objects, the detail `air get -o json`'s
    cli_list, cli_get = air.json("list", "--all-status"), air.json("get", job_id)
    assert [{k: job[k] for k in cli_list[0]} for job in listed] == cli_list
    assert {k: detail[k] for k in cli_get if k != "attempts"} == {k: v for k, v in cli_get.items() if k != "attempts"}
    # And each attempt, as `air get` gives it, opens its MLflow run through this server
    run_id = cli_get["attempts"][0]["mlflow_run_id"]
    assert [{k: a[k] for k in cli_get["attempts"][0]} for a in detail["attempts"]] == cli_get["attempts"]
    assert (
        detail["attempts"][0]["url"]
        == listed[0]["attempts"][0]["url"]
        == f"{jp_base_url}jupyter-air/runs/{run_id}/open"
    )
    assert detail["num_nodes"] == 1 and detail["status"] == "SUCCEEDED"


async def test_a_growing_log_is_followed_by_offset_without_cut_lines_or_characters(api, air, tmp_path):
    # Given a job that writes lines with multi-byte characters over a few seconds, the last one unfinished
    command = script(
        tmp_path,
        "grow.py",
        """
        import sys, time
        for i in range(12):
            print(f"line {i} é€😀 " + "x" * i, flush=True)
            time.sleep(0.25)
        sys.stdout.write("no newline at the end")
        """,
    )
    job_id = air.submit(write_workload(tmp_path, experiment_name="panel-logs", command=command))
    air.wait(job_id, lambda job: job["status"] == "RUNNING")

    # When the panel follows its log from offset 0, each time from the offset the last answer gave
    offset, chunks, answer = 0, [], {"complete": False}
    for _ in range(400):
        answer = await api(job_id, "logs", offset=offset)
        assert answer["offset"] == offset and answer["attempt"] == 0 and answer["node"] == 0
        chunks.append(answer)
        offset = answer["next_offset"]
        if answer["complete"]:
            break
        await asyncio.sleep(0.1)

    # Then the pieces make up the whole log, each a run of whole lines until the log is complete
    text = "".join(c["text"] for c in chunks)
    # (the log pump ends the unfinished last line when the command exits)
    expected = "".join(f"line {i} é€😀 " + "x" * i + "\n" for i in range(12)) + "no newline at the end\n"
    assert answer["complete"] and text == expected
    assert all(c["text"].endswith("\n") for c in chunks[:-1] if c["text"])
    assert sum(1 for c in chunks if c["text"]) >= 3, "the log was read while it grew, in several pieces"
    assert "\ufffd" not in text and offset == len(expected.encode())


async def test_bad_ids_attempts_nodes_and_offsets_are_refused_with_the_reason(api, refused, air, tmp_path):
    # Given a finished job whose log starts with a two-byte character
    command = script(tmp_path, "accent.py", 'print("é-start")')
    job_id = air.submit(write_workload(tmp_path, experiment_name="panel-bad", command=command))
    air.wait(job_id)
    size = len((await api(job_id, "logs"))["text"].encode())

    # When the routes are asked for what the job does not have, Then each says what it does have
    code, message = await refused("job-000000000000")
    assert code == 404 and "no job run 'job-000000000000'" in message
    for parts in (("<script>", "logs"), ("nope", "cancel")):
        code, message = await refused(*parts, method="POST" if parts[1] == "cancel" else "GET")
        assert code == 404 and "no job run" in message
    code, message = await refused(job_id, "logs", attempt="3")
    assert code == 404 and "has 1 attempt(s) (0 to 0, -1 for the latest); there is no attempt 3" in message
    code, message = await refused(job_id, "logs", node="1")
    assert code == 404 and "has 1 node(s) (0 to 0); there is no node 1" in message
    code, message = await refused(job_id, "logs", offset="1")
    assert code == 400 and "inside a UTF-8 character" in message
    code, message = await refused(job_id, "logs", offset=str(size + 1))
    assert code == 400 and f"past the end of the log ({size} bytes)" in message
    for name, value in (("attempt", "-2"), ("node", "-1"), ("offset", "-5"), ("offset", "ten")):
        code, message = await refused(job_id, "logs", **{name: value})
        assert code == 400 and f"{name!r} must be an integer" in message
    code, message = await refused(limit="0")
    assert code == 400 and "'limit' must be an integer from 1 to 1000" in message


async def test_the_whole_log_downloads(jp_fetch, air, tmp_path):
    # Given a finished job
    job_id = air.submit(write_workload(tmp_path, experiment_name="panel-download", command="seq 1 5000"))
    air.wait(job_id)
    # When its log is downloaded
    response = await jp_fetch("jupyter-air", "jobs", job_id, "logs", "download", params={"attempt": "-1"})
    # Then it is the attempt's whole output file, as an attachment
    assert response.body == (node_dir(air.home / "jobs" / job_id, 0, 0) / OUTPUT).read_bytes()
    assert response.body.decode().splitlines()[-1] == "5000"
    assert f'filename="{job_id}-attempt_0-node_0.log"' in response.headers["Content-Disposition"]


async def test_a_running_job_is_canceled_from_the_panel_and_only_with_authentication(
    api, refused, air, tmp_path, jp_http_port, jp_base_url, mlflow_client
):
    # Given a running job
    job_id = air.submit(write_workload(tmp_path, experiment_name="panel-cancel", command="sleep 120"))
    air.wait(job_id, lambda job: job["status"] == "RUNNING")
    url = f"http://localhost:{jp_http_port}{jp_base_url}jupyter-air/jobs/{job_id}/cancel"

    # When someone without the server's token asks to cancel it
    anonymous = await AsyncHTTPClient().fetch(url, method="POST", body=b"", raise_error=False)
    # Then the server refuses and the job runs on
    assert anonymous.code == 403 and air.job(job_id)["status"] == "RUNNING"

    # When the panel cancels it
    summary = await api(job_id, "cancel", method="POST")
    # Then the job ended CANCELED, its attempt's MLflow run KILLED, and no process is left
    assert summary["status"] == "CANCELED" and summary["job_run_id"] == job_id
    assert mlflow_client.get_run(summary["mlflow_run_id"]).info.status == "KILLED"
    air.assert_no_processes()
    # And cancelling it again says it has already ended
    code, message = await refused(job_id, "cancel", method="POST")
    assert code == 409 and "has already ended (CANCELED)" in message


async def test_no_job_database_means_no_jobs_and_nothing_created(api, tmp_path, monkeypatch):
    # Given an AIR_HOME where no job ever ran
    monkeypatch.setenv("AIR_HOME", str(tmp_path / "fresh"))
    # When the panel lists the jobs, Then there are none and nothing was created
    assert await api() == {"jobs": []}
    assert not (tmp_path / "fresh").exists()


async def test_the_panels_job_models_are_made_once_per_server_not_per_request(api, jp_fetch, monkeypatch):
    # Given a server whose panel has not read the jobs yet, and a count of the job models made
    from jupyter_air.workloads.surfaces.jobs_view import JobsView
    from jupyter_air.workloads.surfaces.schedules_view import SchedulesView

    made = []
    for model in (JobsView, SchedulesView):
        original = model.__init__

        def counted(self, *args, _original=original, **kwargs):
            made.append(type(self).__name__)
            _original(self, *args, **kwargs)

        monkeypatch.setattr(model, "__init__", counted)
    # When the panel polls its jobs and schedules three times
    for _ in range(3):
        await api()
        await jp_fetch("jupyter-air", "schedules")
    # Then one JobsView and one SchedulesView served every request
    assert sorted(made) == ["JobsView", "SchedulesView"]
