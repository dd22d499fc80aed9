"""Submitting a workload file from JupyterLab (POST jobs) against a real Jupyter server: the job `air run` would
make, every error `air run` would give, paths outside the root refused, authentication and the XSRF token."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import test_jobs_api
from tornado.httpclient import AsyncHTTPClient, HTTPClientError
from workload_helpers import write_workload

# The jobs routes' GET, shared with test_jobs_api.
api = test_jobs_api.api
BAD = Path(__file__).parent / "bad"


@pytest.fixture
def submit(jp_fetch):
    """POST jobs with a JSON body: the status and the decoded answer, whatever the status."""

    async def post(body) -> tuple[int, dict]:
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        try:
            response = await jp_fetch("jupyter-air", "jobs", method="POST", body=data)
        except HTTPClientError as error:
            return error.code, json.loads(error.response.body)
        return response.code, json.loads(response.body)

    return post


async def test_a_workload_file_is_submitted_from_jupyterlab_as_air_run_does(submit, api, air, jp_root_dir):
    # Given a workload file in a folder under the server's root
    folder = jp_root_dir / "train"
    folder.mkdir()
    write_workload(folder, experiment_name="panel-submit", command="echo from the panel")

    # When JupyterLab submits it by its path relative to the root
    code, job = await submit({"path": "train/workload.yaml"})

    # Then it is created (201) with the job's JSON, the shape `GET jobs/<id>` answers, and it runs as `air run` would
    assert code == 201 and job["status"] == "PENDING" and job["experiment_name"] == "panel-submit"
    assert job["source"] == str(folder / "workload.yaml") and job["num_nodes"] == 1
    assert set(job) == set(await api(job["job_run_id"]))
    done = air.wait(job["job_run_id"])
    assert done["status"] == "SUCCEEDED", done
    assert "from the panel" in air("logs", job["job_run_id"], check=True).stdout


async def test_a_bad_workload_file_is_refused_with_every_error_as_air_run_gives_them(submit, air, jp_root_dir):
    # Given a workload file with three mistakes, under the server's root
    many = (BAD / "many_errors.yaml").read_text()
    (jp_root_dir / "many_errors.yaml").write_text(many)
    # (what `air run` says of it, run from the root as a terminal of the server would)
    printed = air("run", "-f", "many_errors.yaml", cwd=jp_root_dir)

    # When JupyterLab submits it
    code, refused = await submit({"path": "many_errors.yaml"})

    # Then it is refused (400) with every error at once, the lines `air run` prints, and nothing is created
    assert code == 400 and printed.returncode == 2
    assert refused["errors"] == [line.strip() for line in printed.stderr.splitlines()[1:]]
    assert len(refused["errors"]) == 3 and refused["errors"][0].startswith("many_errors.yaml:")
    assert refused["message"] == printed.stderr.removeprefix("air run: error: ").rstrip("\n")
    assert not (air.home / "jobs.db").exists()


@pytest.mark.parametrize(
    "body, expected",
    [
        ({"path": "../outside.yaml"}, "the path leaves the server's root"),
        ({"path": "/etc/passwd"}, "must be relative to the server's root"),
        ({"path": "missing.yaml"}, "no such file under the server's root"),
        ({"path": ".hidden/workload.yaml"}, "it is hidden"),
        ({"path": 3}, 'send {"path": '),
        (b"not json", 'send {"path": '),
    ],
)
async def test_a_path_that_is_no_workload_file_under_the_root_is_refused(submit, air, jp_root_dir, body, expected):
    # Given files outside the root and in a hidden folder
    write_workload(jp_root_dir.parent, name="outside.yaml", command="echo escaped")
    (jp_root_dir / ".hidden").mkdir()
    write_workload(jp_root_dir / ".hidden", command="echo hidden")
    # When JupyterLab submits a path that names no workload file it may run, Then it is refused, creating nothing
    code, refused = await submit(body)
    assert code == 400 and expected in refused["message"] and expected in refused["errors"][0]
    assert not (air.home / "jobs.db").exists()


async def test_submitting_needs_authentication_and_the_xsrf_token(
    jp_fetch, air, jp_root_dir, jp_http_port, jp_base_url
):
    # Given a workload file, and a browser logged in to the server (its cookie) that sends no XSRF token
    write_workload(jp_root_dir, command="echo never")
    page = await jp_fetch("jupyter-air", "version")
    cookie = next(c.split(";")[0] for c in page.headers.get_list("Set-Cookie") if c.startswith("username-"))
    url = f"http://localhost:{jp_http_port}{jp_base_url}jupyter-air/jobs"
    body = json.dumps({"path": "workload.yaml"})

    # When it is submitted without the token, or with the cookie but without the XSRF token
    anonymous = await AsyncHTTPClient().fetch(url, method="POST", body=body, raise_error=False)
    cross_site = await AsyncHTTPClient().fetch(
        url, method="POST", body=body, headers={"Cookie": cookie}, raise_error=False
    )

    # Then both are refused and nothing is created
    assert anonymous.code == 403 and cross_site.code == 403, (anonymous.body, cross_site.body)
    assert not (air.home / "jobs.db").exists()
