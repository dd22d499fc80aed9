"""`make hub` (``python -m jupyter_air.team.demo``): the team stack comes up on 127.0.0.1, writes hub-demo.json
(0600) with working tokens that another local user (`nobody`) cannot read, a user's JupyterLab spawns with
jupyter_air in it, tracking into the team's MLflow server with the user's hub token, and Ctrl-C stops every process
it started. A ``--dir`` not this user's alone is refused before anything starts, and its secrets are never written
through a link or into another user's file."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

import psutil
import pytest
from resident_servers import stop_all

from jupyter_air.owned import NotOurs, private_folder, write_private

#: Seconds the stack may take to come up (the MLflow server is the slowest: about 20-80 s here).
START_SECONDS = 400


def call(url: str, token: str, method: str = "GET", body: dict | None = None) -> tuple[int, dict]:
    request = urllib.request.Request(
        url,
        data=None if body is None else json.dumps(body).encode(),
        method=method,
        headers={"Authorization": f"token {token}", "Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=60) as answer:
            text = answer.read().decode()
            return answer.status, json.loads(text) if text else {}
    except urllib.error.HTTPError as err:
        return err.code, {}


@pytest.fixture
def open_parent(tmp_path):
    """A temporary folder every local user may enter (``tmp_path``'s own parents are the test user's alone), so that
    what keeps ``nobody`` out is the stack's own modes."""
    parent = Path(tempfile.mkdtemp(prefix="air-hub-test-"))
    parent.chmod(0o755)
    yield parent
    stop_all(parent)  # users' servers start their AIR_HOME's zygote, resident by design: not left to its idle stop
    shutil.rmtree(parent, ignore_errors=True)


def start_demo(folder: Path) -> subprocess.Popen:
    """`make hub --dir folder`, in a process group of its own (Ctrl-C to the group stops all it started)."""
    return subprocess.Popen(
        [sys.executable, "-m", "jupyter_air.team.demo", "--dir", str(folder)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )


def test_make_hub_starts_the_team_stack_writes_its_tokens_and_stops_it_all(open_parent):
    # Given `make hub` started in a folder
    folder = open_parent / "stack"
    demo = start_demo(folder)
    try:
        deadline = time.monotonic() + START_SECONDS
        while not (folder / "hub-demo.json").exists():
            assert demo.poll() is None and time.monotonic() < deadline, demo.stdout.read()
            time.sleep(1)
        time.sleep(0.5)  # written in one go, but let the writer finish
        info = json.loads((folder / "hub-demo.json").read_text())
        started = psutil.Process(demo.pid).children(recursive=True)

        # Then hub-demo.json is the owner's alone and its tokens work: the hub knows alice, air-jobs answers her
        assert (folder / "hub-demo.json").stat().st_mode & 0o777 == 0o600 and folder.stat().st_mode & 0o777 == 0o700
        for path in (folder / "hub-demo.json", folder / "hub" / "jupyterhub_config.py", folder / "mlflow" / "auth.db"):
            probe = f"open({str(path)!r}).read()"  # another local user: no token, password or user store to read
            as_nobody = subprocess.run(
                ["runuser", "-u", "nobody", "--", "/usr/bin/python3.11", "-c", probe], capture_output=True, text=True
            )
            assert as_nobody.returncode != 0 and "PermissionError" in as_nobody.stderr, (path, as_nobody.stderr)
        alice, bob = info["tokens"]["alice"], info["tokens"]["bob"]
        assert call(f"{info['hub_url']}/hub/api/user", alice)[1]["name"] == "alice"
        assert call(info["jobs_service_url"] + "jobs", alice) == (200, {"jobs": []})
        # And the team's MLflow server takes hub tokens, and shares nothing by default
        api = f"{info['mlflow_url']}/api/2.0/mlflow/experiments"
        made = call(f"{api}/create", alice, "POST", {"name": "/Users/alice/x"})
        assert made[0] == 200
        assert call(f"{api}/get?experiment_id={made[1]['experiment_id']}", bob)[0] == 403

        # When alice's server is spawned, Then it runs JupyterLab with jupyter_air, tracking into the team's server
        assert call(f"{info['hub_url']}/hub/api/users/alice/server", alice, "POST")[0] in (201, 202)
        while not call(f"{info['hub_url']}/hub/api/users/alice", alice)[1].get("servers", {}).get("", {}).get("ready"):
            assert time.monotonic() < deadline + 120
            time.sleep(1)
        status, version = call(f"{info['hub_url']}/user/alice/jupyter-air/version", alice)
        assert status == 200 and version["version"]
        # And from her server (its MLflow credentials are her hub token) she shares her experiment with bob
        share = {"experiment": "/Users/alice/x", "user": "bob", "level": "READ"}
        assert call(f"{info['hub_url']}/user/alice/jupyter-air/experiments/share", alice, "POST", share)[0] == 200
        assert call(f"{api}/get?experiment_id={made[1]['experiment_id']}", bob)[0] == 200
        # And her Experiment panel's jobs are the team's job service's: a workload she runs from her server is hers
        # there, and bob is refused its logs until she grants him
        (folder / "hub" / "users" / "alice" / "train.yaml").write_text(
            "experiment_name: /Users/alice/jobs\ncommand: echo trained\ncompute:\n  num_accelerators: 0\n"
        )
        lab = f"{info['hub_url']}/user/alice/jupyter-air/jobs"
        status, job = call(lab, alice, "POST", {"path": "train.yaml"})
        assert status == 201 and job["user"] == "alice", job
        assert [j["job_run_id"] for j in call(info["jobs_service_url"] + "jobs", alice)[1]["jobs"]] == [
            job["job_run_id"]
        ]
        assert call(f"{info['jobs_service_url']}jobs/{job['job_run_id']}/logs", bob)[0] == 403
        grant = {"user": "bob", "level": "CAN_VIEW"}
        assert call(f"{lab}/{job['job_run_id']}/permissions", alice, "PUT", grant)[0] == 200
        assert call(f"{info['jobs_service_url']}jobs/{job['job_run_id']}", bob)[0] == 200
        # And its run is on the team's MLflow server, in her experiment (made as hers): she reads it, and so does bob
        # (his CAN_VIEW on the job came with READ on it, granted as her), carol does not
        while (ran := call(f"{lab}/{job['job_run_id']}", alice)[1])["status"] in ("PENDING", "RUNNING"):
            assert time.monotonic() < deadline + 240, ran
            time.sleep(0.5)
        assert ran["status"] == "SUCCEEDED", ran
        run = f"{info['mlflow_url']}/api/2.0/mlflow/runs/get?run_id={ran['attempts'][0]['mlflow_run_id']}"
        carol = info["tokens"]["carol"]
        assert (call(run, alice)[0], call(run, bob)[0], call(run, carol)[0]) == (200, 200, 403)
    finally:
        # When it is stopped with Ctrl-C
        os.killpg(demo.pid, signal.SIGINT)
        demo.wait(timeout=120)
    # Then it exits 0 and leaves no process behind
    assert demo.returncode == 0
    _, alive = psutil.wait_procs(started, timeout=60)  # a wait for their exit on a loaded machine, not a timing
    assert [(p.pid, p.cmdline()[:3]) for p in alive if p.is_running() and p.status() != psutil.STATUS_ZOMBIE] == []


def demo_exit(folder: Path) -> tuple[int | None, str]:
    """The exit status and output of `make hub --dir folder` (None if it was still starting after 30 s: then it is
    stopped with Ctrl-C, which stops all it started)."""
    demo = start_demo(folder)
    try:
        return demo.wait(timeout=30), demo.stdout.read()
    except subprocess.TimeoutExpired:
        os.killpg(demo.pid, signal.SIGINT)
        demo.communicate(timeout=START_SECONDS)
        return None, "still starting after 30 s"


@pytest.mark.skipif(os.geteuid() != 0, reason="acting as a second user needs root to switch users")
def test_make_hub_refuses_a_dir_someone_else_made_first_and_writes_nothing_there(open_parent):
    # Given folders that were there before `make hub`: nobody's (open to all), one of ours others may write or enter,
    # and a link to a private folder of ours
    public = open_parent / "public"
    public.mkdir()
    public.chmod(0o1777)  # as /tmp
    theirs = public / "theirs"
    made = subprocess.run(["runuser", "-u", "nobody", "--", "mkdir", "-m", "777", str(theirs)], capture_output=True)
    assert made.returncode == 0, made.stderr
    open_to_all, readable, ours, link = (open_parent / name for name in ("open", "readable", "ours", "link"))
    for folder, mode in ((open_to_all, 0o777), (readable, 0o755), (ours, 0o700)):
        folder.mkdir()
        folder.chmod(mode)
    link.symlink_to(ours)
    cases = {
        theirs: f"{theirs} belongs to nobody (uid 65534), not to you",
        open_to_all: f"{open_to_all} can be written by other users (mode 777): run `chmod 700 {open_to_all}`",
        readable: f"{readable} can be entered by other users (mode 755): run `chmod 700 {readable}`",
        link: f"{link} is a symbolic link",
    }
    for folder, words in cases.items():
        # When `make hub --dir` is given it
        code, output = demo_exit(folder)

        # Then it exits 2 before starting anything, saying which folder and why, and writes nothing there
        assert code == 2 and f"--dir {folder} cannot hold the stack's secrets: {words}" in output, output
        assert list(folder.iterdir()) == [], folder


def test_the_stacks_secrets_never_go_through_a_planted_link_or_into_another_users_file(open_parent):
    # Given the stack's private folder where hub-demo.json is a link to a file others may read
    folder = private_folder(open_parent / "stack")
    assert folder.stat().st_mode & 0o777 == 0o700
    catch = open_parent / "catch.json"
    catch.write_text("")
    catch.chmod(0o644)
    (folder / "hub-demo.json").symlink_to(catch)

    # When the secrets are written, Then it is refused and the linked file gets nothing
    with pytest.raises(NotOurs, match="hub-demo.json is a symbolic link, so secrets are not written there"):
        write_private(folder / "hub-demo.json", '{"password": "s3cret"}')
    assert catch.read_text() == ""

    # Given instead a hub-demo.json of another user's (root may give it away), Then it is refused too
    (folder / "hub-demo.json").unlink()
    (folder / "hub-demo.json").write_text("")
    if os.geteuid() == 0:
        os.chown(folder / "hub-demo.json", 65534, 65534)
        with pytest.raises(NotOurs, match=r"hub-demo.json is nobody \(uid 65534\)'s"):
            write_private(folder / "hub-demo.json", '{"password": "s3cret"}')

    # When it is gone, Then the secrets go in a new file of mode 600, written again in place by a second start
    (folder / "hub-demo.json").unlink()
    for password in ("s3cret", "an0ther"):
        write_private(folder / "hub-demo.json", json.dumps({"password": password}))
        assert json.loads((folder / "hub-demo.json").read_text()) == {"password": password}
    assert (folder / "hub-demo.json").stat().st_mode & 0o777 == 0o600 and os.listdir(folder) == ["hub-demo.json"]


STARTER = """
import sys, time
from pathlib import Path
from jupyter_air.team.stack import Hub

folder = Path(sys.argv[1])
Hub(folder, {"AIR_HOME": str(folder / "air")}).ready()
print("ready", flush=True)
time.sleep(600)
"""


def test_a_hub_whose_starter_is_killed_stops_everything_it_started(tmp_path):
    # Given a team stack's hub (its proxy and air-jobs service running) started by a process
    folder = tmp_path / "hub"
    folder.mkdir(mode=0o700)
    starter = subprocess.Popen([sys.executable, "-c", STARTER, str(folder)], stdout=subprocess.PIPE, text=True)
    started: list[psutil.Process] = []
    try:
        assert starter.stdout.readline() == "ready\n"
        started = psutil.Process(starter.pid).children(recursive=True)
        names = " ".join(" ".join(p.cmdline()) for p in started)
        assert "jupyterhub" in names and "configurable-http-proxy" in names and "jupyter_air.team.service" in names

        # When the starter is killed (no clean-up of its own can run)
        starter.kill()
        starter.wait()

        # Then the hub stops, and with it the proxy and the service
        gone, alive = psutil.wait_procs(started, timeout=60)
        assert alive == [], [p.cmdline() for p in alive]
    finally:
        for process in [starter, *started]:
            with contextlib.suppress(psutil.Error, ProcessLookupError):
                process.kill()
