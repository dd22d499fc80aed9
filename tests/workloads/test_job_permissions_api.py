"""Job permissions through `air permissions`, a workload's `permissions:` and the jobs/<id>/permissions route of a
real Jupyter server, in single-user mode: AIR_HOME's owner is the one user, so a grant to anyone else is refused
with what to do, and nothing changes."""

from __future__ import annotations

import getpass
import json

import pytest
from tornado.httpclient import HTTPClientError
from workload_helpers import write_workload

pytestmark = pytest.mark.local_store  # a job grant grants the experiment in the store

ME = getpass.getuser()


def test_air_permissions_lists_the_owner_and_refuses_grants_it_cannot_make(air, tmp_path):
    # Given a job of this user
    job = air.submit(write_workload(tmp_path, experiment_name="perm-cli", command="echo done"))

    # When the permissions are listed, as a table and as JSON
    table = air("permissions", job, check=True).stdout
    listed = air.json("permissions", job)

    # Then the owner is this user with IS_OWNER, and there are no grants
    assert f"job {job} (your level: IS_OWNER)" in table and f"user  {ME}  IS_OWNER" in table
    assert listed == {
        "kind": "job",
        "name": job,
        "owner": ME,
        "your_level": "IS_OWNER",
        "grants": [],
        "from_schedule": None,
    }
    # And grants that cannot be made exit 2 with the reason, changing nothing
    for args, expected in [
        (("--user", "bob", "--level", "CAN_VIEW"), "unknown user 'bob': this AIR_HOME is"),
        (("--group", "ml", "--level", "CAN_VIEW"), "unknown group 'ml'"),
        (("--user", ME, "--level", "CAN_MANAGE"), "(IS_OWNER): a grant would change nothing"),
        (("--user", "bob"), "give --user or --group with --level or --revoke"),
        (("--level", "CAN_VIEW"), "give --user or --group with --level or --revoke"),
        (("--user", "bob", "--level", "IS_OWNER"), "invalid choice: 'IS_OWNER'"),
    ]:
        result = air("permissions", job, *args)
        assert result.returncode == 2 and expected in result.stderr, (args, result.stderr)
    assert air.json("permissions", job) == listed
    # And an unknown job or schedule is named
    missing = air("permissions", "job-000000000000")
    assert missing.returncode == 2 and "no job run 'job-000000000000'" in missing.stderr


def test_a_workload_granting_an_unknown_user_is_refused_at_its_line_and_creates_nothing(air, tmp_path):
    # Given a workload file whose permissions name a user this AIR_HOME does not have
    path = write_workload(
        tmp_path, experiment_name="perm-yaml", command="echo x", permissions=[{"user": "bob", "level": "CAN_VIEW"}]
    )

    # When it is run
    result = air("run", "-f", str(path))

    # Then it exits 2 naming the file, line and field, and no job store was created
    assert result.returncode == 2
    assert "permissions.0.user: unknown user 'bob'" in result.stderr and f"{path.name}:" in result.stderr
    assert not (air.home / "jobs.db").exists()


async def test_the_permissions_route_answers_as_air_permissions_and_refuses_bad_grants(jp_fetch, air, tmp_path):
    # Given a job of the server's user
    job = air.submit(write_workload(tmp_path, experiment_name="perm-route", command="echo done"))

    # When the panel reads its permissions
    got = json.loads((await jp_fetch("jupyter-air", "jobs", job, "permissions")).body)

    # Then it is what `air permissions -o json` prints
    assert got == air.json("permissions", job)
    # And grants that cannot be made are 400 with the reason
    for body, expected in [
        ({"user": "bob", "level": "CAN_VIEW"}, "unknown user 'bob'"),
        ({"user": "bob", "level": "IS_OWNER"}, "a job has one owner"),
        ({"user": "bob", "level": "CAN_READ"}, "unknown level 'CAN_READ'"),
        ({"level": "CAN_VIEW"}, "name exactly one user or one group"),
        ({"user": ["bob"], "level": "CAN_VIEW"}, "the user to grant to has no name"),
    ]:
        with pytest.raises(HTTPClientError) as refused:
            await jp_fetch("jupyter-air", "jobs", job, "permissions", method="PUT", body=json.dumps(body))
        message = json.loads(refused.value.response.body)["message"]
        assert refused.value.code == 400 and expected in message, (body, message)
    # And nothing changed; an unknown job is 404
    assert json.loads((await jp_fetch("jupyter-air", "jobs", job, "permissions")).body) == got
    with pytest.raises(HTTPClientError) as missing:
        await jp_fetch("jupyter-air", "jobs", "job-000000000000", "permissions")
    assert missing.value.code == 404
