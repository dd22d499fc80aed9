"""Temporary folders whose owner is gone are removed by this user's next sweep; nothing else is."""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from jupyter_air import scratch


@pytest.fixture
def temp(monkeypatch):
    """A temporary folder of the test's own, as the sweep sees it: world-writable and sticky, as /tmp is, and
    reachable by ``nobody`` (pytest's own folders are not)."""
    folder = Path(tempfile.mkdtemp(prefix="air-scratch-test-"))
    folder.chmod(0o1777)
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    yield folder
    shutil.rmtree(folder)


def ended_process() -> int:
    done = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    return int(done.stdout)


def test_only_this_users_folders_whose_owner_ended_are_removed(temp):
    # Given folders of this user: one whose owner ended, one of this live process, one recording no owner
    dead = scratch.make("air-call-")
    scratch.claim(dead, ended_process())
    (dead / "payload.pkl").write_bytes(b"left behind")
    live = scratch.make("air-launcher-")
    unowned = Path(tempfile.mkdtemp(prefix="air-call-"))
    # and, named alike, another user's folder whose owner ended, and a link to one of this user's folders
    nobody = pwd.getpwnam("nobody").pw_uid
    theirs = temp / "air-call-theirs"
    owner = f"{ended_process()} None"
    subprocess.run(
        ["runuser", "-u", "nobody", "--", "sh", "-c", f"mkdir -m 700 {theirs} && echo {owner} > {theirs}/owner.pid"],
        check=True,
    )
    target = scratch.make("kept-", temp)
    scratch.claim(target, ended_process())
    (temp / "air-launcher-link").symlink_to(target)

    # When this user sweeps
    removed = scratch.sweep()

    # Then only the folder whose owner ended is gone, with what it held
    assert removed == [dead] and not dead.exists()
    assert live.is_dir() and unowned.is_dir() and target.is_dir()
    assert theirs.stat().st_uid == nobody and (theirs / scratch.OWNER_NAME).read_text().strip() == owner


def test_a_sweep_of_another_folder_removes_what_ended_there_only(temp, tmp_path):
    # Given a job's temporary folder (its TMPDIR) holding a call's folder whose owner was killed, and one in the
    # temporary folder of this process
    elsewhere = scratch.make("air-call-", tmp_path)
    scratch.claim(elsewhere, ended_process())
    here = scratch.make("air-call-")
    scratch.claim(here, ended_process())

    # When the job's supervisor sweeps the job's folder
    removed = scratch.sweep(parent=tmp_path)

    # Then only that folder's is gone
    assert removed == [elsewhere] and not elsewhere.exists() and here.is_dir()


def test_a_folder_is_owner_only_and_names_its_owner(temp):
    folder = scratch.make("air-call-")

    assert folder.parent == temp and folder.stat().st_mode & 0o777 == 0o700
    pid, _ = (folder / scratch.OWNER_NAME).read_text().split()
    assert int(pid) == os.getpid() and scratch.owner_gone(folder) is False
