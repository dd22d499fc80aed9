"""An AIR_HOME another local user could write is never used: the folder itself, a folder above it or a state file in
it (``jobs.db``, ``mlflow.db`` ...) that is another user's, or that others may write, is refused with what, why and
how to fix it, and nothing is created or run there. The audit's steps: ``nobody`` planted a due schedule in a
folder of theirs, and ``air scheduler`` ran it as root."""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import tempfile
from pathlib import Path

import pytest
from workload_helpers import Air, write_workload

from jupyter_air.cli import main
from jupyter_air.home import AirHomeError, air_home

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="acting as a second user needs root to switch users")

NOBODY = 65534
FIX = "export AIR_HOME=~/.jupyter_air"
PLANT = """
import shutil, sqlite3, sys
shutil.copy(sys.argv[1], sys.argv[2])
with sqlite3.connect(sys.argv[2]) as db:
    db.execute("UPDATE schedules SET next_fire_ms = 0")  # due now
"""


@pytest.fixture
def shared_tmp():
    """A temp folder every user may enter (pytest's own are root-only), so only the modes below protect what is in
    it."""
    folder = Path(tempfile.mkdtemp(prefix="air-owner-"))
    folder.chmod(0o755)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def public(shared_tmp):
    """A folder in it where every user may make files and folders, sticky as /tmp."""
    folder = shared_tmp / "public"
    folder.mkdir()
    folder.chmod(0o1777)
    return folder


def as_nobody(*command: str) -> subprocess.CompletedProcess:
    done = subprocess.run(["runuser", "-u", "nobody", "--", *command], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    return done


def listing(folder: Path) -> dict[str, tuple[int, int]]:
    """Every file and folder under ``folder`` with its size and modification time."""
    return {str(p): (p.lstat().st_size, p.lstat().st_mtime_ns) for p in [folder, *folder.rglob("*")]}


def refused(home: Path, *words: str) -> None:
    """``air_home()`` with AIR_HOME=``home`` raises an AirHomeError with ``words`` and the way out."""
    with pytest.raises(AirHomeError) as error:
        air_home({"AIR_HOME": str(home)})
    assert f"AIR_HOME={home.resolve()} cannot be used: " in str(error.value)
    assert all(w in str(error.value) for w in (*words, "another user could plant or swap", FIX)), error.value


def test_a_due_schedule_another_user_planted_never_runs(shared_tmp, public, tmp_path, tracking_uri):
    # Given a job database with a schedule whose job would leave a mark, copied by `nobody` into a folder of
    # theirs (mode 700) with its schedule due now
    mark = shared_tmp / "ran-as-root"
    template = Air(tmp_path / "template", tracking_uri)
    command = f"touch {mark}"
    schedule = {"quartz_cron_expression": "0 0 2 * * ?", "timezone_id": "UTC"}
    template("run", "-f", str(write_workload(tmp_path, command=command, schedule=schedule)), check=True)
    readable = shared_tmp / "template.db"
    with sqlite3.connect(template.home / "jobs.db") as source, sqlite3.connect(readable) as copy:
        source.backup(copy)
    readable.chmod(0o644)
    theirs = public / "theirs"
    as_nobody("mkdir", "-m", "700", str(theirs))
    as_nobody("/usr/bin/python3.11", "-c", PLANT, str(readable), str(theirs / "jobs.db"))
    before = listing(theirs)

    # When root runs the scheduler with that folder as AIR_HOME
    air = Air(theirs, tracking_uri)
    try:
        result = air("scheduler", "--once")

        # Then it exits 2 naming the folder, whose it is, why and how to fix it; nothing ran, nothing changed there
        assert result.returncode == 2, result.stdout + result.stderr
        assert f"AIR_HOME={theirs} cannot be used: {theirs} belongs to nobody (uid {NOBODY}), not to you" in (
            result.stderr
        )
        assert "another user could plant or swap" in result.stderr and FIX in result.stderr
        assert "Traceback" not in result.stderr and "SUBMITTED" not in result.stdout
        assert listing(theirs) == before and not mark.exists()
    finally:
        air.assert_no_processes()


@pytest.mark.parametrize("name", ["jobs.db", "mlflow.db", "mlflow-server.json", "forks-0123.pid", "live-runs", "jobs"])
def test_a_state_file_of_another_user_in_our_air_home_is_refused(tmp_path, name):
    # Given our own private AIR_HOME where a state file or folder is nobody's (planted while it was open)
    home = tmp_path / "air"
    home.mkdir(mode=0o700)
    planted = home / name
    planted.mkdir() if "." not in name else planted.write_text("")
    os.chown(planted, NOBODY, NOBODY)
    before = listing(home)

    # When AIR_HOME is asked for, Then it is refused naming the file and whose it is, and nothing is created
    refused(home, f"{planted} belongs to nobody (uid {NOBODY})", f"mv {planted} {planted}.not-mine")
    assert listing(home) == before


def test_a_state_file_others_may_write_or_that_links_to_another_users_is_refused(tmp_path, public):
    # Given our own AIR_HOME whose jobs.db others may write
    home = tmp_path / "air"
    home.mkdir(mode=0o700)
    (home / "jobs.db").write_text("")
    (home / "jobs.db").chmod(0o666)
    # Then it is refused with its mode
    refused(home, f"{home / 'jobs.db'} can be written by other users (mode 666)")

    # Given instead a mlflow.db that is our link to a file of nobody's
    (home / "jobs.db").unlink()
    theirs = public / "their.db"
    as_nobody("touch", str(theirs))
    (home / "mlflow.db").symlink_to(theirs)
    # Then it is refused, whose the file it names is
    refused(home, f"{home / 'mlflow.db'} belongs to nobody (uid {NOBODY})")


def test_a_folder_above_air_home_that_others_may_write_or_own_is_refused_and_nothing_is_made(
    shared_tmp, public, capsys, monkeypatch
):
    # Given a folder of ours every user may write (0777, no sticky bit: another user could swap what is in it)
    open_to_all = shared_tmp / "x"
    open_to_all.mkdir()
    open_to_all.chmod(0o777)
    # When `air list` uses a new AIR_HOME in it, Then it exits 2 saying so, and creates nothing
    monkeypatch.setenv("AIR_HOME", str(open_to_all / "air"))
    assert main(["list"]) == 2
    err = capsys.readouterr().err
    assert f"{open_to_all} can be written by other users (mode 777)" in err and f"chmod go-w {open_to_all}" in err
    assert FIX in err and list(open_to_all.iterdir()) == []

    # Given a folder of nobody's, a folder writable by a group another user is in, and a link of nobody's to ours
    theirs = public / "theirs"
    as_nobody("mkdir", "-m", "755", str(theirs))
    grouped = shared_tmp / "grouped"
    grouped.mkdir(mode=0o770)
    os.chown(grouped, 0, NOBODY)  # nogroup: nobody's group
    grouped.chmod(0o770)
    ours = shared_tmp / "ours"
    ours.mkdir(mode=0o700)
    link = public / "link"
    as_nobody("ln", "-s", str(ours), str(link))
    # Then an AIR_HOME under or through each is refused, and nothing is made there
    refused(theirs / "air", f"{theirs} belongs to nobody (uid {NOBODY})")
    refused(grouped / "air", f"{grouped} can be written by other users (mode 770)")
    refused(link, f"{link} belongs to nobody (uid {NOBODY})")
    assert [*theirs.iterdir(), *grouped.iterdir(), *ours.iterdir()] == []


def test_air_home_itself_writable_by_others_is_refused_but_a_sticky_or_our_groups_folder_above_is_fine(shared_tmp):
    # Given an AIR_HOME of ours every user may write, sticky or not
    for mode in (0o777, 0o1777):
        home = shared_tmp / f"home-{mode:o}"
        home.mkdir()
        home.chmod(mode)
        # Then it is refused
        refused(home, f"{home} can be written by other users (mode {mode:o})")

    # Given a sticky folder every user may write, as /tmp
    sticky = shared_tmp / "tmp"
    sticky.mkdir()
    sticky.chmod(0o1777)
    # And a folder writable by a group no other account is in (root's, as a user-private group)
    grouped = shared_tmp / "grouped"
    grouped.mkdir()
    grouped.chmod(0o770)
    assert grouped.stat().st_gid == 0 and os.getgid() == 0
    for above in (sticky, grouped):
        # When a new AIR_HOME of ours is made in it, Then it is used, owner-only
        home = air_home({"AIR_HOME": str(above / "air")})
        assert home == above / "air" and home.stat().st_mode & 0o777 == 0o700 and home.stat().st_uid == os.geteuid()
