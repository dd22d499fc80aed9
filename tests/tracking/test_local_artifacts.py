"""A run's local artifact folder is written without following links, and as the account it is asked to write as."""

from __future__ import annotations

import os
import pwd
import shutil

import pytest

from jupyter_air.tracking.local_artifacts import UnsafeArtifactPath, keep, local_folder

root_only = pytest.mark.skipif(shutil.which("runuser") is None or os.geteuid() != 0, reason="needs root")


@pytest.fixture
def log(tmp_path):
    source = tmp_path / "job" / "output.log"
    source.parent.mkdir()
    source.write_text("ssh-ed25519 AAAA bob@evil\n")
    return source


@pytest.fixture
def keys(tmp_path):
    """A file that must never be written (an ``authorized_keys``), with its content."""
    path = tmp_path / "authorized_keys"
    path.write_text("ssh-ed25519 AAAA root@host\n")
    path.chmod(0o600)
    return path


def test_local_folders_are_told_from_other_stores():
    assert local_folder("file:///srv/art/1/abc/artifacts") == local_folder("/srv/art/1/abc/artifacts")
    assert str(local_folder("file:///srv/my%20art")) == "/srv/my art"
    assert local_folder("s3://bucket/art") is None and local_folder("mlflow-artifacts:/1/abc") is None


def test_a_link_planted_as_the_log_is_replaced_never_written_through(tmp_path, log, keys):
    # Given a run's artifact folder where the log's name is a link to a file that must not change
    logs = tmp_path / "art" / "run" / "artifacts" / "logs"
    logs.mkdir(parents=True)
    (logs / "output.log").symlink_to(keys)

    # When the log is kept there
    keep(tmp_path / "art" / "run" / "artifacts", "logs", [log])

    # Then the log is a file of its own and the link's target is untouched
    assert not (logs / "output.log").is_symlink()
    assert (logs / "output.log").read_text() == "ssh-ed25519 AAAA bob@evil\n"
    assert keys.read_text() == "ssh-ed25519 AAAA root@host\n"


def test_a_link_among_the_folders_is_refused_and_nothing_is_written(tmp_path, log):
    # Given a run's artifact folder whose "logs" folder is a link to another folder
    elsewhere = tmp_path / "root-only"
    elsewhere.mkdir()
    artifacts = tmp_path / "art" / "run" / "artifacts"
    artifacts.mkdir(parents=True)
    (artifacts / "logs").symlink_to(elsewhere)

    # When the log is kept under logs/attempt_0, Then that is refused, naming the link and what to do
    with pytest.raises(UnsafeArtifactPath) as refused:
        keep(artifacts, "logs/attempt_0", [log])
    assert f"{artifacts / 'logs'} is a symbolic link" in str(refused.value)
    assert "Give the experiment an artifact location whose path holds none" in str(refused.value)
    # And nothing was created through it
    assert list(elsewhere.iterdir()) == []


@root_only
def test_files_are_written_as_the_account_asked_never_as_this_process(shared_tmp, log):
    # Given the account nobody, a folder it owns and one only root may write
    nobody = pwd.getpwnam("nobody")
    as_nobody = {"user": nobody.pw_uid, "group": nobody.pw_gid, "extra_groups": []}
    theirs, roots = shared_tmp / "theirs", shared_tmp / "roots"
    theirs.mkdir()
    roots.mkdir(mode=0o755)
    os.chown(theirs, nobody.pw_uid, nobody.pw_gid)

    # When root keeps the log as nobody in each
    keep(theirs, "logs", [log], as_nobody)
    with pytest.raises(PermissionError) as refused:
        keep(roots, "logs", [log], as_nobody)

    # Then nobody's folder holds the log, owned by nobody; root's folder holds nothing
    kept = theirs / "logs" / "output.log"
    assert kept.read_text() == log.read_text() and kept.stat().st_uid == nobody.pw_uid
    assert f"in {roots}" in str(refused.value) and f"as uid {nobody.pw_uid}" in str(refused.value)
    assert list(roots.iterdir()) == []
