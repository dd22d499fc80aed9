"""Job permissions without a hub: every level x action against the table users know, with the caller's identity
injected at the service boundary (``JobsView``, ``Schedules``, ``Access``) over a real job store."""

from __future__ import annotations

import pytest

from jupyter_air.workloads.jobs.errors import OutOfRange
from jupyter_air.workloads.jobs.jobs import NotActive, Resolved
from jupyter_air.workloads.schedules.schedules import ScheduleNotFound, Schedules
from jupyter_air.workloads.schedules.tick import Busy, run_now
from jupyter_air.workloads.state.permissions import BadGrant, Caller, Forbidden
from jupyter_air.workloads.surfaces.access import Access
from jupyter_air.workloads.surfaces.jobs_view import JobsView

#: Who may do what, as the permissions guide documents it (a literal, so a change to the code shows here).
ALLOWED = {
    "view": {"CAN_VIEW", "CAN_MANAGE_RUN", "CAN_MANAGE", "owner", "admin"},
    "logs": {"CAN_VIEW", "CAN_MANAGE_RUN", "CAN_MANAGE", "owner", "admin"},
    "cancel": {"CAN_MANAGE_RUN", "CAN_MANAGE", "owner", "admin"},
    "run-now": {"CAN_MANAGE_RUN", "CAN_MANAGE", "owner", "admin"},
    "pause": {"CAN_MANAGE", "owner", "admin"},
    "permissions": {"CAN_MANAGE", "owner", "admin"},
    "delete": {"CAN_MANAGE", "owner", "admin"},
}
WHO = ["nobody granted", "CAN_VIEW", "CAN_MANAGE_RUN", "CAN_MANAGE", "owner", "admin", "group CAN_MANAGE_RUN"]


class Team:
    """The users and groups of a team, as a hub would know them."""

    users, groups = {"alice", "bob", "carol"}, {"ml"}

    def has_user(self, name: str) -> bool:
        return name in self.users

    def has_group(self, name: str) -> bool:
        return name in self.groups

    def unknown(self, kind: str, name: str) -> str:
        return f"no {kind} {name!r} in the team"


def view(home, name: str, groups=(), admin=False) -> JobsView:
    return JobsView(home, caller=Caller(name, frozenset(groups), admin), directory=Team())


def alice_job(home, **tags) -> str:
    """A job alice submitted, recorded only (no supervisor: what is checked is who may act, not the action)."""
    workload = {"experiment_name": "exp", "command": "true", "compute": {"num_accelerators": 0}, "max_retries": 0}
    workload["tags"] = tags
    return view(home, "alice").jobs.store.create_job(workload, "w.yaml", "alice", "local").job_run_id


def alice_schedule(home, name="nightly") -> None:
    timing = {"quartz_cron_expression": "0 0 2 * * ?", "timezone_id": "UTC", "pause_status": "UNPAUSED"}
    timing |= {"catchup": "once", "max_concurrent_runs": 1}
    workload = {"experiment_name": name, "command": "true", "compute": {"num_accelerators": 0}, "schedule": timing}
    Schedules(view(home, "alice").jobs).upsert(Resolved(workload, "w.yaml", "local", []), user="alice")


def caller_for(home, who: str, target: str) -> JobsView:
    """bob with the grant ``who`` names on ``target`` (given by alice), alice herself, or an admin."""
    if who == "owner":
        return view(home, "alice")
    if who == "admin":
        return view(home, "root", admin=True)
    if who.startswith("group "):
        Access(view(home, "alice").jobs).grant(target, group="ml", level=who.split()[1])
        return view(home, "bob", groups={"ml"})
    if who != "nobody granted":
        Access(view(home, "alice").jobs).grant(target, user="bob", level=who)
    return view(home, "bob")


def attempt(action: str, home, who: str) -> None:
    """Do ``action`` as ``who``; an allowed action gets past the check (and may then fail for its own reason)."""
    if action in ("view", "logs", "cancel"):
        job = alice_job(home)
        jobs = caller_for(home, who, job)
        view(home, "alice").jobs.store.finish(job, "SUCCEEDED")  # ended: a cancel let through stops at NotActive
        if action == "view":
            assert jobs.get(job)["job_run_id"] == job
        elif action == "logs":
            with pytest.raises(OutOfRange, match="has no attempt yet"):
                jobs.logs(job, -1, 0, 0)
        else:
            with pytest.raises(NotActive):
                jobs.cancel(job)
        return
    alice_schedule(home)
    jobs = caller_for(home, who, "nightly").jobs
    if action == "run-now":
        alice_job(home, **{"air.schedule": "nightly", "air.scheduled_time": "x"})  # busy: nothing is submitted
        with pytest.raises(Busy):
            run_now(jobs, "nightly")
    elif action == "permissions":
        Access(jobs).grant("nightly", user="carol", level="CAN_VIEW")
    else:
        getattr(Schedules(jobs), {"pause": "pause", "delete": "delete"}[action])("nightly")


@pytest.mark.parametrize("action", list(ALLOWED))
@pytest.mark.parametrize("who", WHO)
def test_each_level_allows_exactly_the_actions_of_the_table(action, who, tmp_path):
    # Given alice's job or schedule, and a caller with a level on it (or none)
    home = tmp_path / "air"
    level = who.split()[-1] if who.startswith("group ") else who

    # When the caller tries the action
    if level in ALLOWED[action]:
        attempt(action, home, who)  # Then it gets through the permission check
        return
    with pytest.raises(Forbidden) as denied:
        attempt(action, home, who)
    # Then it is refused with a message that names the job or schedule and whom to ask
    message = str(denied.value)
    assert "(alice's)" in message and "Ask a user with Can Manage permission on it, or an admin" in message
    needed = {"view": "Can View", "logs": "Can View", "cancel": "Can Manage Run", "run-now": "Can Manage Run"}
    assert f"grant you at least {needed.get(action, 'Can Manage')} on the" in message


def test_logs_refusal_reads_as_the_runtime_words_it(tmp_path):
    # Given alice's job and bob without a grant
    home = tmp_path / "air"
    job = alice_job(home)

    # When bob reads its logs
    with pytest.raises(Forbidden) as denied:
        view(home, "bob").logs(job, -1, 0, 0)

    # Then the message names the job and asks for Can View
    assert str(denied.value) == (
        f"You do not have permission to read the logs of job {job} (alice's). Ask a user with Can Manage permission "
        "on it, or an admin, to grant you at least Can View on the job."
    )


def test_lists_show_a_caller_only_what_they_may_see(tmp_path):
    # Given two jobs of alice, one shared with bob, and one schedule shared with the ml group
    home = tmp_path / "air"
    shared, private = alice_job(home), alice_job(home)
    alice_schedule(home, "nightly")
    alice_schedule(home, "weekly")
    Access(view(home, "alice").jobs).grant(shared, user="bob", level="CAN_VIEW")
    Access(view(home, "alice").jobs).grant("weekly", group="ml", level="CAN_VIEW")

    # Then bob's job list holds the shared job only, and the schedules list the ml group's only
    assert [j["job_run_id"] for j in view(home, "bob").list()["jobs"]] == [shared]
    assert [s.name for s in Schedules(view(home, "bob", groups={"ml"}).jobs).list()] == ["weekly"]
    assert {j["job_run_id"] for j in view(home, "alice").list()["jobs"]} == {shared, private}
    with pytest.raises(Forbidden):
        Schedules(view(home, "bob").jobs).get("nightly")


def test_a_schedule_grant_covers_the_jobs_it_fires(tmp_path):
    # Given alice's schedule, bob with CAN_VIEW on it, and a job it fired
    home = tmp_path / "air"
    alice_schedule(home)
    Access(view(home, "alice").jobs).grant("nightly", user="bob", level="CAN_VIEW")
    job = alice_job(home, **{"air.schedule": "nightly"})

    # Then bob reads the job and sees where his level comes from, but may not cancel it
    listing = Access(view(home, "bob").jobs).list(job)
    assert listing["your_level"] == "CAN_VIEW" and listing["grants"] == []
    assert listing["from_schedule"]["grants"][0] | {"granted_ms": 0} == {
        "user": "bob",
        "level": "CAN_VIEW",
        "granted_by": "alice",
        "granted_ms": 0,
    }
    with pytest.raises(Forbidden):
        view(home, "bob").cancel(job)


@pytest.mark.parametrize(
    "caller, grant, expected",
    [
        ("alice", {"user": "dave", "level": "CAN_VIEW"}, "no user 'dave' in the team"),
        ("alice", {"group": "ops", "level": "CAN_VIEW"}, "no group 'ops' in the team"),
        ("alice", {"user": "bob", "level": "CAN_READ"}, "unknown level 'CAN_READ'; choose one of CAN_VIEW,"),
        ("alice", {"user": "bob", "level": "IS_OWNER"}, "a job has one owner"),
        ("alice", {"user": "bob", "group": "ml", "level": "CAN_VIEW"}, "exactly one user or one group"),
        ("bob", {"user": "carol", "level": "CAN_VIEW"}, "grant you at least Can Manage on the job"),
    ],
)
def test_a_bad_grant_says_why_and_changes_nothing(caller, grant, expected, tmp_path):
    # Given alice's job with bob at CAN_MANAGE_RUN
    home = tmp_path / "air"
    job = alice_job(home)
    Access(view(home, "alice").jobs).grant(job, user="bob", level="CAN_MANAGE_RUN")
    before = Access(view(home, "alice").jobs).list(job)

    # When the grant is asked for
    with pytest.raises((BadGrant, Forbidden)) as refused:
        Access(view(home, caller).jobs).grant(job, **grant)

    # Then it says what is wrong, and the grants are as they were
    assert expected in str(refused.value)
    assert Access(view(home, "alice").jobs).list(job) == before


def test_grants_are_replaced_and_taken_back(tmp_path):
    # Given alice's job
    home = tmp_path / "air"
    job = alice_job(home)
    access = Access(view(home, "alice").jobs)

    # When she gives bob CAN_VIEW, then CAN_MANAGE, then takes it back
    first = access.grant(job, user="bob", level="CAN_VIEW")
    second = access.grant(job, user="bob", level="CAN_MANAGE")
    third = access.grant(job, user="bob")

    # Then bob holds one grant at a time, and none at the end; no experiment grant is written on a local store
    assert [g["level"] for g in first["grants"]] == ["CAN_VIEW"]
    assert [g["level"] for g in second["grants"]] == ["CAN_MANAGE"]
    assert third["grants"] == [] and third["owner"] == "alice"
    assert first["experiment_grant"].startswith("none: experiment 'exp' is not on this session's shared")
    with pytest.raises(Forbidden):
        view(home, "bob").get(job)


def test_unknown_names_are_not_found(tmp_path):
    home = tmp_path / "air"
    alice_job(home)
    with pytest.raises(ScheduleNotFound):
        Access(view(home, "alice").jobs).list("no-such-schedule")
