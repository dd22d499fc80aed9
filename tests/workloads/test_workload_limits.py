"""How big a workload may be: a file (or a POST jobs body) over the limit is refused before it is read, with the
limit and the size found; values written out are not aliases, however many; an alias bomb still is one."""

from __future__ import annotations

import json
import time

import pytest
import yaml
from tornado.httpclient import HTTPClientError
from workload_helpers import write_workload

from jupyter_air.cli import main
from jupyter_air.server.handlers import MAX_BODY_BYTES
from jupyter_air.team.submissions import submit_sent
from jupyter_air.workloads.file.limits import MAX_FILE_BYTES
from jupyter_air.workloads.jobs.jobs import SubmitError
from jupyter_air.workloads.state.permissions import Caller
from jupyter_air.workloads.surfaces.jobs_view import JobsView
from jupyter_air.workloads.surfaces.team_jobs import ServiceAnswer, ServiceJobs

PLAIN_ENTRIES = 10_500
LIMIT_WORDS = "a workload file may be at most 1 MB (1,000,000 bytes): keep data in files the command reads, not in it"


def big_workload(folder, size: int):
    """A workload file of at least ``size`` bytes (a long comment), valid but for its size."""
    path = write_workload(folder, "big.yaml", experiment_name="air-tests-big", command="true")
    with path.open("a") as out:
        out.write("# " + "x" * size + "\n")
    return path


def test_a_2_mb_workload_file_is_refused_at_once_with_its_size_and_the_limit(air, tmp_path, capsys):
    # Given a workload file of 2 MB
    path = big_workload(tmp_path, 2_000_000)
    size = path.stat().st_size

    # When it is submitted
    started = time.monotonic()
    code = main(["run", "-f", str(path)])
    took = time.monotonic() - started

    # Then air exits 2 at once (it never reads the file), saying its size and the limit, and creates nothing
    err = capsys.readouterr().err
    assert code == 2 and took < 2.0, (code, took)
    assert f"{path}: the file is 2 MB ({size:,} bytes); {LIMIT_WORDS}" in err and "Traceback" not in err
    assert not (air.home / "jobs.db").exists()


def test_a_file_just_under_the_limit_is_read(air, tmp_path, capsys):
    # Given a workload file of a little under 1 MB, When it is submitted with --dry-run, Then it is accepted
    path = big_workload(tmp_path, MAX_FILE_BYTES - 1_000)
    assert path.stat().st_size <= MAX_FILE_BYTES
    assert main(["run", "-f", str(path), "--dry-run", "-o", "json"]) == 0, capsys.readouterr().err


def test_thousands_of_plain_env_entries_are_no_alias_bomb(air, tmp_path, capsys):
    # Given a workload with 10,500 environment variables written out (about 150 KB, no alias)
    env = {f"VAR_{i}": f"value {i}" for i in range(PLAIN_ENTRIES)}
    path = write_workload(tmp_path, experiment_name="air-tests-env", command="true", env_variables=env)

    # When it is submitted with --dry-run, Then it is accepted with every entry
    assert main(["run", "-f", str(path), "--dry-run", "-o", "json"]) == 0, capsys.readouterr().err
    assert len(json.loads(capsys.readouterr().out)["workload"]["env_variables"]) == PLAIN_ENTRIES


def test_an_alias_bomb_among_plain_entries_is_refused_as_one(air, tmp_path, capsys):
    # Given 10,500 plain entries and, after them, aliases that repeat a 1,000-item list 20 times
    env = yaml.safe_dump({"env_variables": {f"VAR_{i}": "x" for i in range(PLAIN_ENTRIES)}})
    items = ", ".join(["lol"] * 1_000)
    bomb = f"parameters:\n  a: &a [{items}]\n  b: [{', '.join(['*a'] * 20)}]\n"
    path = tmp_path / "bomb.yaml"
    path.write_text(f"experiment_name: air-tests-bomb\ncommand: 'true'\n{env}{bomb}")
    line = path.read_text().splitlines().index(f"  b: [{', '.join(['*a'] * 20)}]") + 1

    # When it is submitted, Then it is refused at the line of the repeating aliases, in words about aliases
    assert main(["run", "-f", str(path)]) == 2
    err = capsys.readouterr().err
    assert f"bomb.yaml:{line}: YAML aliases here expand to more than 10000 values (an alias bomb?)" in err, err
    assert not (air.home / "jobs.db").exists()


async def test_a_post_jobs_body_over_the_limit_is_a_413_naming_it(jp_fetch, air):
    # Given a POST jobs body larger than any workload sent as JSON can be
    body = json.dumps({"path": "workload.yaml", "padding": "x" * MAX_BODY_BYTES}).encode()

    # When JupyterLab (or anyone) sends it
    with pytest.raises(HTTPClientError) as error:
        await jp_fetch("jupyter-air", "jobs", method="POST", body=body)

    # Then it is refused with 413, the body's size and the limit, and nothing is created
    message = json.loads(error.value.response.body)["message"]
    assert error.value.code == 413, message
    assert f"({len(body)} bytes); at most 3.1 MB ({MAX_BODY_BYTES} bytes) is read" in message
    assert "a workload file may be at most 1 MB" in message
    assert not (air.home / "jobs.db").exists()


async def test_a_workload_file_over_the_limit_submitted_from_jupyterlab_is_a_400_with_its_size(
    jp_fetch, air, jp_root_dir
):
    # Given a 2 MB workload file under the server's root
    path = big_workload(jp_root_dir, 2_000_000)

    # When JupyterLab submits it by its path
    with pytest.raises(HTTPClientError) as error:
        await jp_fetch("jupyter-air", "jobs", method="POST", body=json.dumps({"path": "big.yaml"}).encode())

    # Then it is refused (400) with its size and the limit, and nothing is created
    answer = json.loads(error.value.response.body)
    assert error.value.code == 400
    assert answer["errors"] == [f"big.yaml: the file is 2 MB ({path.stat().st_size:,} bytes); {LIMIT_WORDS}"]
    assert not (air.home / "jobs.db").exists()


def test_a_workload_over_the_limit_sent_to_the_team_service_is_refused_with_its_size(tmp_path):
    # Given bob's 2 MB workload, sent to the team's job service as text
    text = "experiment_name: team-big\ncommand: 'true'\n# " + "x" * 2_000_000 + "\n"
    view = JobsView(tmp_path / "air", caller=Caller("bob"))
    body = {"workload": text, "path": str(tmp_path / "train.yaml"), "label": "train.yaml"}

    # When the service checks it, Then it is refused with the size sent and the limit, and nothing is created
    with pytest.raises(SubmitError) as refused:
        submit_sent(view, body)
    assert refused.value.problems == [f"train.yaml: the workload sent is 2 MB ({len(text):,} bytes); {LIMIT_WORDS}"]
    assert not (tmp_path / "air").exists()


def test_air_run_with_a_team_service_refuses_a_file_over_the_limit_without_sending_it(tmp_path):
    # Given a 2 MB workload file, and a team service address where nothing listens
    path = big_workload(tmp_path, 2_000_000)
    service = ServiceJobs("http://127.0.0.1:9/services/air-jobs/", "token")

    # When it is sent, Then it is refused here (400, not "does not answer"), with its size and the limit
    with pytest.raises(ServiceAnswer) as refused:
        service.send(path, "big.yaml")
    assert refused.value.status == 400
    assert refused.value.errors == [f"big.yaml: the file is 2 MB ({path.stat().st_size:,} bytes); {LIMIT_WORDS}"]
