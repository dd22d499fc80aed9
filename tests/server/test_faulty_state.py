"""A damaged job database or MLflow store, seen through a real Jupyter server: the routes answer 503 naming the
file and what to do, the MLflow UI's first visit ends as soon as the UI process exits, its background start backs
off until the file changes, the job checks log once."""

from __future__ import annotations

import json
import logging
import os

import psutil
import pytest
from tornado.httpclient import HTTPClientError

from jupyter_air.server import tasks
from jupyter_air.server.tasks import JobChecks, UiAutostart
from jupyter_air.tracking import resident

GARBAGE = 64 << 10


@pytest.fixture
def home(tmp_path, monkeypatch):
    """A private AIR_HOME of the test's own with the embedded store (no MLFLOW_TRACKING_URI)."""
    home = tmp_path / "air"
    home.mkdir(mode=0o700)
    monkeypatch.setenv("AIR_HOME", str(home))
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    return home


@pytest.fixture
def jp_server_config(home, air_config, fake_nvml):
    """The server starts with that AIR_HOME (its MLflow UI's environment is taken then)."""
    return {"ServerApp": {"jpserver_extensions": {"jupyter_air": True}}, "JupyterAir": air_config}


def damage(path) -> None:
    path.write_bytes(os.urandom(GARBAGE))


async def refused(jp_fetch, *parts, **params) -> tuple[int, str]:
    with pytest.raises(HTTPClientError) as error:
        await jp_fetch(*parts, params=params)
    return error.value.code, json.loads(error.value.response.body)["message"]


async def test_a_damaged_job_database_is_a_503_naming_it(jp_fetch, home):
    # Given a jobs.db overwritten with garbage
    damage(home / "jobs.db")

    # When the panel lists the jobs and asks for one
    for parts in (("jupyter-air", "jobs"), ("jupyter-air", "jobs", "job-0123456789ab")):
        code, message = await refused(jp_fetch, *parts)

        # Then each answers 503 with the file and what to do
        assert code == 503
        assert f"{home / 'jobs.db'} is damaged (file is not a database)" in message
        assert "move it aside" in message and "restore it from a backup" in message


async def test_a_damaged_mlflow_store_is_a_503_naming_it(jp_fetch, home):
    # Given the embedded store overwritten with garbage
    damage(home / "mlflow.db")

    # When a notebook's runs and the timeline's runs are asked for, Then each answers 503 naming the file
    for params in ({"notebook": "work/a.ipynb"}, {"from": "0", "to": "1"}):
        code, message = await refused(jp_fetch, "jupyter-air", "runs", **params)
        assert code == 503 and f"{home / 'mlflow.db'} is damaged (file is not a database)" in message
    # And a run's link says the same instead of "no such run"
    with pytest.raises(HTTPClientError) as error:
        await jp_fetch("jupyter-air", "runs", "0a1b2c3d", "open", follow_redirects=False)
    assert error.value.code == 503 and b"mlflow.db is damaged" in error.value.response.body


async def test_the_first_mlflow_ui_visit_on_a_damaged_store_answers_503_once_the_ui_exits(jp_fetch, home):
    # Given the embedded store overwritten with garbage
    damage(home / "mlflow.db")

    # When the MLflow UI is opened (its process starts, finds the store damaged and exits)
    with pytest.raises(HTTPClientError) as error:
        await jp_fetch("mlflow/", request_timeout=100)

    # Then the answer is a 503 that names the file, not the start timeout, and no UI process is left
    page = error.value.response.body.decode()
    assert error.value.code == 503 and "the MLflow UI exited while starting" in page
    assert f"{home / 'mlflow.db'} is damaged" in page and "did not start within" not in page
    assert ui_processes(home) == []


def ui_processes(home) -> list[psutil.Process]:
    """MLflow UI processes started for ``home`` (by this test's server)."""
    found = []
    for process in psutil.process_iter():
        try:
            if process.environ().get("AIR_HOME") == str(home) and "ui_server" in " ".join(process.cmdline()):
                found.append(process)
        except psutil.Error:
            continue
    return found


def test_the_job_checks_log_a_damaged_job_database_once_in_one_line(home, caplog):
    # Given a jobs.db overwritten with garbage, and the server's periodic job check
    damage(home / "jobs.db")
    checks = JobChecks(5, logging.getLogger("test-job-checks"))
    caplog.set_level(logging.INFO, logger="test-job-checks")

    # When the check runs three times
    for _ in range(3):
        checks._check_home()

    # Then the problem is logged once, in one line naming the file, without a traceback
    (record,) = caplog.records
    assert record.levelno == logging.WARNING and not record.exc_info
    assert f"{home / 'jobs.db'} is damaged" in record.getMessage() and "\n" not in record.getMessage()

    # When the database is moved aside as the message says, Then the next check says the checks work again
    (home / "jobs.db").rename(home / "jobs.db.damaged")
    checks._check_home()
    assert caplog.records[-1].levelno == logging.INFO and "checked again" in caplog.records[-1].getMessage()
    checks.stop()


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a file to another user needs root")
async def test_a_job_database_of_another_user_is_a_503_and_the_job_checks_log_it_in_one_line(jp_fetch, home, caplog):
    # Given a jobs.db in AIR_HOME that is nobody's (planted while the folder was open)
    (home / "jobs.db").write_text("")
    os.chown(home / "jobs.db", 65534, 65534)
    said = f"AIR_HOME={home} cannot be used: {home / 'jobs.db'} belongs to nobody (uid 65534)"

    # When the panel lists the jobs, Then it answers 503 naming the file, whose it is and what to do
    code, message = await refused(jp_fetch, "jupyter-air", "jobs")
    assert code == 503 and said in message and "export AIR_HOME=~/.jupyter_air" in message, message

    # When the server's job check runs, Then it acts on nothing there and logs why once, in one line
    checks = JobChecks(5, logging.getLogger("test-job-checks"))
    caplog.set_level(logging.INFO, logger="test-job-checks")
    for _ in range(2):
        checks._check_home()
    (record,) = [r for r in caplog.records if r.name == "test-job-checks"]
    assert record.levelno == logging.WARNING and not record.exc_info and said in record.getMessage()
    assert (home / "jobs.db").read_text() == "" and sorted(os.listdir(home)) == ["jobs.db"], os.listdir(home)
    checks.stop()


class TestAnAirHomeThatIsAFile:
    @pytest.fixture
    def home(self, tmp_path, monkeypatch, air_config):
        """AIR_HOME set to a file before the server starts, the MLflow UI started in the background."""
        (tmp_path / "a-file").write_text("notes")
        monkeypatch.setenv("AIR_HOME", str(tmp_path / "a-file"))
        air_config["mlflow_ui_autostart"] = True
        return tmp_path / "a-file"

    async def test_it_is_a_503_in_one_line_and_the_rest_works(self, jp_fetch, home, caplog):
        # When the GPU panel, the runs and the jobs are asked for
        gpu = await jp_fetch("jupyter-air", "gpu")
        code, message = await refused(jp_fetch, "jupyter-air", "runs", notebook="work/a.ipynb")
        jobs = await jp_fetch("jupyter-air", "jobs")

        # Then the GPU panel and the (empty) jobs list answer, the runs say what is wrong, and no traceback
        # is logged (the MLflow UI's background start included)
        assert gpu.code == 200 and json.loads(jobs.body) == {"jobs": []}
        assert code == 503 and f"AIR_HOME={home} is not a folder" in message
        with pytest.raises(HTTPClientError) as error:
            await jp_fetch("jupyter-air", "runs", "0a1b2c3d", "open", follow_redirects=False)
        assert error.value.code == 503 and b"is not a folder" in error.value.response.body
        assert [r.getMessage() for r in caplog.records if r.exc_info] == []
        # And the MLflow UI's first visit says why it cannot start, as soon as its process has exited
        with pytest.raises(HTTPClientError) as error:
            await jp_fetch("mlflow/", request_timeout=100)
        assert error.value.code == 503 and f"AIR_HOME={home} is not a folder" in error.value.response.body.decode()
        assert ui_processes(home) == []
        assert home.read_text() == "notes"


class TestADamagedStoreWithTheUiStartedInTheBackground:
    @pytest.fixture
    def home(self, home, air_config, monkeypatch):
        """The MLflow UI started in the background, tried again 1 s after a failed start (then 2, 4 ...); the
        server's own checks never come: the test makes each one, on a clock it moves."""
        monkeypatch.setattr(tasks, "UI_CHECK_SECONDS", 3600.0)
        air_config.update(mlflow_ui_autostart=True, mlflow_ui_retry_seconds=1.0)
        return home

    @pytest.fixture
    def starts(self, monkeypatch) -> list:
        """The MLflow UI processes started (each by the real ``resident._spawn``)."""
        started, spawn = [], resident._spawn

        def counted(*args):
            started.append(spawn(*args))
            return started[-1]

        monkeypatch.setattr(resident, "_spawn", counted)
        return started

    async def test_it_starts_less_and_less_often_and_at_once_when_the_file_changes(
        self, jp_serverapp, jp_fetch, home, starts, caplog
    ):
        # Given a damaged store, and the server's background start of its MLflow UI on a clock the test moves
        damage(home / "mlflow.db")
        (app,) = jp_serverapp.extension_manager.extension_apps["jupyter_air"]
        (autostart,) = [task for task in app._tasks if isinstance(task, UiAutostart)]
        now = [0.0]
        autostart.ui.retry.clock = lambda: now[0]

        # When it checks every second for 8 s
        for second in range(8):
            now[0] = float(second)
            await autostart._check()

        # Then it started the UI at 0, 1, 3 and 7 s, not at every check, and said why once, naming the file
        assert len(starts) == 4
        said = ui_start_warnings(caplog)
        assert len(said) == 1 and f"{home / 'mlflow.db'} is damaged" in said[0] and "tried again in 1 s" in said[0]
        # And the UI route still answers 503 naming the file
        with pytest.raises(HTTPClientError) as error:
            await jp_fetch("mlflow/", request_timeout=100)
        assert error.value.code == 503 and f"{home / 'mlflow.db'} is damaged" in error.value.response.body.decode()

        # When the file is replaced by another damaged copy, Then the next check starts it at once, said once more
        started = len(starts)
        (home / "other.db").write_bytes(os.urandom(GARBAGE))
        (home / "other.db").replace(home / "mlflow.db")
        await autostart._check()
        await autostart._check()
        assert len(starts) == started + 1
        assert len(ui_start_warnings(caplog)) == 2

        # When it is moved aside and a new store takes its place (an empty file, which the UI's start sets up)
        (home / "mlflow.db").rename(home / "mlflow.db.damaged")
        (home / "mlflow.db").touch(mode=0o600)
        try:
            await autostart._check()

            # Then the next check starts the UI at once, and its route answers
            assert len(starts) == started + 2 and autostart.ui.running
            assert (await jp_fetch("mlflow/health", request_timeout=100)).code == 200
        finally:
            resident.stop(resident.record_path(autostart.ui.uri))
        assert ui_processes(home) == []


def ui_start_warnings(caplog) -> list[str]:
    """What the background start of the MLflow UI warned about."""
    said = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    return [m for m in said if m.startswith("jupyter_air: the MLflow UI")]
