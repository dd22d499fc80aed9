"""Who may do what to a job or a schedule: the levels users know (``CAN_VIEW`` < ``CAN_MANAGE_RUN`` < ``CAN_MANAGE``
< ``IS_OWNER``, the submitter), grants to users and groups kept in the job store, and the one check every job
action goes through.

The caller is named at the service boundary (a team's job service takes it from JupyterHub); ``None`` is the
single-user case, AIR_HOME's owner, who may do everything. A grant on a job covers what it lets one do with the job;
it never reaches the MLflow experiment by itself (``EXPERIMENT_LEVELS`` maps it for those who write that grant too).
Knows nothing of HTTP or the command line.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from jupyter_air.error_kinds import BAD_INPUT, FORBIDDEN
from jupyter_air.workloads.state.records import Job, Schedule, now_ms
from jupyter_air.workloads.state.store import JobStore

#: The job permissions, from least to most.
LEVELS = ("CAN_VIEW", "CAN_MANAGE_RUN", "CAN_MANAGE", "IS_OWNER")
#: The least level each action needs: reading a job's status and its logs alike (the logs are the job's output).
ACTIONS = {
    "view": "CAN_VIEW",
    "logs": "CAN_VIEW",
    "cancel": "CAN_MANAGE_RUN",
    "run-now": "CAN_MANAGE_RUN",
    "pause": "CAN_MANAGE",
    "permissions": "CAN_MANAGE",
    "delete": "CAN_MANAGE",
}
#: The MLflow experiment permission that goes with each job permission.
EXPERIMENT_LEVELS = {"CAN_VIEW": "READ", "CAN_MANAGE_RUN": "EDIT", "CAN_MANAGE": "MANAGE", "IS_OWNER": "MANAGE"}
_WORDS = {"CAN_VIEW": "Can View", "CAN_MANAGE_RUN": "Can Manage Run", "CAN_MANAGE": "Can Manage"}
_DOING = {
    "view": "see {kind} {target}",
    "logs": "read the logs of {kind} {target}",
    "cancel": "cancel {kind} {target}",
    "run-now": "run {kind} {target} now",
    "pause": "pause or resume {kind} {target}",
    "permissions": "change who may use {kind} {target}",
    "delete": "delete {kind} {target}",
}


class Forbidden(PermissionError):
    """The caller lacks the level an action needs; the message names the job and whom to ask."""

    kind = FORBIDDEN


class BadGrant(ValueError):
    """A grant that cannot be made as asked: unknown user, group or level, or IS_OWNER."""

    kind = BAD_INPUT


@dataclass(frozen=True)
class Caller:
    """Who asks: a user, the groups they are in, and whether they administer the deployment (admins may do all)."""

    name: str
    groups: frozenset[str] = field(default_factory=frozenset)
    admin: bool = False


class Directory(Protocol):
    """The users and groups grants may name (the hub's, in a team)."""

    def has_user(self, name: str) -> bool: ...

    def has_group(self, name: str) -> bool: ...

    def unknown(self, kind: str, name: str) -> str:
        """Why ``name`` (a ``user`` or ``group``) cannot be granted anything, and what to do."""


@dataclass(frozen=True)
class OwnerOnly:
    """Single-user mode's directory: AIR_HOME is its owner's alone, so its owner is the one user."""

    owner: str

    def has_user(self, name: str) -> bool:
        return name == self.owner

    def has_group(self, name: str) -> bool:
        return False

    def unknown(self, kind: str, name: str) -> str:
        return (
            f"unknown {kind} {name!r}: this AIR_HOME is {self.owner}'s alone (single-user mode), so its jobs have no "
            "other users to share with; a team shares jobs through its job service (the user guide's \"Give others "
            'access to a job")'
        )


@dataclass(frozen=True)
class Target:
    """What a grant is on: a job (``kind`` "job", ``name`` its id) or a schedule (its name), with its owner and, for a
    job a schedule fired, that schedule (whose grants cover its jobs)."""

    kind: str
    name: str
    owner: str
    schedule: str | None = None

    @property
    def key(self) -> str:
        return f"{self.kind}:{self.name}"


@dataclass(frozen=True)
class Grant:
    principal: str  # "user:<name>" or "group:<name>"
    level: str
    granted_by: str
    granted_ms: int

    def to_json(self) -> dict:
        kind, name = self.principal.split(":", 1)
        return {kind: name, "level": self.level, "granted_by": self.granted_by, "granted_ms": self.granted_ms}


class Permissions:
    """The grants in one job store, as seen by one caller (``None``: AIR_HOME's owner)."""

    def __init__(self, store: JobStore, directory: Directory, caller: Caller | None = None):
        self.store, self.directory, self.caller = store, directory, caller

    def level(self, target: Target) -> str | None:
        """The caller's level on ``target``: its owner's, the highest of its grants (and its schedule's), or None."""
        caller = self.caller
        if caller is None or caller.admin or caller.name == target.owner:
            return "IS_OWNER"
        mine = {f"user:{caller.name}", *(f"group:{g}" for g in caller.groups)}
        levels = [g.level for g in self._effective(target) if g.principal in mine]
        return max(levels, key=LEVELS.index, default=None)

    def visible(self, targets: list[Target]) -> list[bool]:
        """Whether the caller has any level on each of ``targets``, from one read of their grants (for lists)."""
        caller = self.caller
        if caller is None or caller.admin:
            return [True] * len(targets)
        mine = [f"user:{caller.name}", *(f"group:{g}" for g in caller.groups)]
        with self.store.transaction() as db:
            rows = db.execute(
                f"SELECT DISTINCT target FROM permissions WHERE principal IN ({','.join('?' * len(mine))})", mine
            ).fetchall()
        granted = {row["target"] for row in rows}
        return [t.owner == caller.name or t.key in granted or f"schedule:{t.schedule}" in granted for t in targets]

    def require(self, target: Target, action: str) -> None:
        """Raise Forbidden unless the caller may do ``action`` (a key of ACTIONS) to ``target``."""
        needed, have = ACTIONS[action], self.level(target)
        if have is not None and LEVELS.index(have) >= LEVELS.index(needed):
            return
        doing = _DOING[action].format(kind=target.kind, target=target.name)
        raise Forbidden(
            f"You do not have permission to {doing} ({target.owner}'s). Ask a user with Can Manage permission on it, "
            f"or an admin, to grant you at least {_WORDS[needed]} on the {target.kind}."
        )

    def grants(self, target: Target) -> dict:
        """Who may use ``target``: its owner and its grants (CAN_VIEW to see them)."""
        self.require(target, "view")
        own = [g.to_json() for g in self._read(target.key)]
        inherited = [g.to_json() for g in self._read(f"schedule:{target.schedule}")] if target.schedule else []
        return {
            "kind": target.kind,
            "name": target.name,
            "owner": target.owner,
            "your_level": self.level(target),
            "grants": own,
            "from_schedule": {"name": target.schedule, "grants": inherited} if target.schedule else None,
        }

    def check_grant(self, user: str | None, group: str | None, level: str | None) -> str:
        """The principal of a grant to ``user`` or ``group`` of ``level`` (None: take it back); BadGrant says what
        is wrong."""
        if (user is None) == (group is None):
            raise BadGrant("name exactly one user or one group to grant to")
        kind, name = ("user", user) if user is not None else ("group", group)
        if not isinstance(name, str) or not name.strip():
            raise BadGrant(f"the {kind} to grant to has no name")
        if level is not None and level not in LEVELS:
            raise BadGrant(f"unknown level {str(level)[:50]!r}; choose one of {', '.join(LEVELS[:3])}")
        if level == "IS_OWNER":
            raise BadGrant("a job has one owner, the user who submitted it; grant CAN_MANAGE to let others manage it")
        known = self.directory.has_user(name) if kind == "user" else self.directory.has_group(name)
        if not known:
            raise BadGrant(self.directory.unknown(kind, name))
        return f"{kind}:{name}"

    def grant(self, target: Target, user: str | None, group: str | None, level: str | None) -> dict:
        """Give ``user`` or ``group`` ``level`` on ``target`` (replacing theirs), or take it back (``level`` None);
        the caller needs CAN_MANAGE. Nothing changes when it raises."""
        principal = self.check_grant(user, group, level)
        if principal == f"user:{target.owner}":
            raise BadGrant(f"{target.owner} owns {target.kind} {target.name} (IS_OWNER): a grant would change nothing")
        self.require(target, "permissions")
        by = self.caller.name if self.caller is not None else target.owner
        with self.store.transaction(immediate=True) as db:
            db.execute("DELETE FROM permissions WHERE target = ? AND principal = ?", (target.key, principal))
            if level is not None:
                db.execute(
                    "INSERT INTO permissions (target, principal, level, granted_by, granted_ms) VALUES (?,?,?,?,?)",
                    (target.key, principal, level, by, now_ms()),
                )
        return self.grants(target)

    def record(self, target: Target, grants: list[dict], by: str) -> None:
        """Write a workload's ``permissions:`` (already checked) for a job just created."""
        with self.store.transaction(immediate=True) as db:
            for item in grants:
                kind = "user" if item.get("user") else "group"
                db.execute(
                    "INSERT OR REPLACE INTO permissions (target, principal, level, granted_by, granted_ms)"
                    " VALUES (?,?,?,?,?)",
                    (target.key, f"{kind}:{item[kind]}", item["level"], by, now_ms()),
                )

    def _effective(self, target: Target) -> list[Grant]:
        grants = self._read(target.key)
        return grants + self._read(f"schedule:{target.schedule}") if target.schedule else grants

    def _read(self, key: str) -> list[Grant]:
        with self.store.transaction() as db:
            rows = db.execute(
                "SELECT principal, level, granted_by, granted_ms FROM permissions WHERE target = ? ORDER BY principal",
                (key,),
            ).fetchall()
        return [Grant(**dict(row)) for row in rows]


def job_target(job: Job) -> Target:
    return Target("job", job.job_run_id, job.user, job.schedule)


def schedule_target(schedule: Schedule) -> Target:
    return Target("schedule", schedule.name, schedule.user)


def grant_problems(grants: list[dict], directory: Directory) -> list[str]:
    """A workload's ``permissions:`` checked against whom grants may name (``permissions.N.user: why``)."""
    problems = []
    for index, item in enumerate(grants):
        kind = "user" if item.get("user") else "group"
        known = directory.has_user(item[kind]) if kind == "user" else directory.has_group(item[kind])
        if not known:
            problems.append(f"permissions.{index}.{kind}: {directory.unknown(kind, item[kind])}")
    return problems
