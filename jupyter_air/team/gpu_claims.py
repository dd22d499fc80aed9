"""The team's GPU ledger for its users' notebook calls: a call in a user's kernel on the hub's machine takes its GPUs
from the ledger of the air-jobs service's store, which the team's jobs take theirs from, so one user's call and
another's job (or two users' calls) never get the same GPU; who waits goes by the team's fair share. The claim is
the caller's (their hub name, whatever the request says), kept while the calling process lives; where the hub user
is also an account of this machine, that process must be theirs."""

from __future__ import annotations

import pwd
from dataclasses import dataclass

import psutil

from jupyter_air.error_kinds import BAD_INPUT, FORBIDDEN, NOT_FOUND
from jupyter_air.workloads.state.fair_share import Claim
from jupyter_air.workloads.state.ledger import GpuLedger
from jupyter_air.workloads.state.store import JobStore

#: The longest claim id and label a request may send.
MAX_ID, MAX_LABEL = 64, 200


class BadClaim(ValueError):
    """A claim request that cannot be used (the message says what to send)."""

    kind = BAD_INPUT


class NotYourProcess(PermissionError):
    """A claim naming a process of another account than the caller's."""

    kind = FORBIDDEN


class NoSuchClaim(LookupError):
    """A claim id the caller does not have."""

    kind = NOT_FOUND


@dataclass(frozen=True)
class TeamGpus:
    """The service's ledger, answering claims as their hub user."""

    store: JobStore

    def claim(self, user: str, body: dict) -> dict:
        """Queue (or look again at) ``user``'s claim ``{"claim_id", "label", "count", "indexes", "pid"}`` (and
        ``"pool"``, a Ray cluster's, for a call there): ``{"gpus": [...] or None, "position", "reason"}``."""
        claim_id, label, count, indexes, pid = _fields(body)
        pool = body.get("pool", "")
        _check_owner(user, pid)
        ledger = GpuLedger(self.store)
        self._own(ledger, user, claim_id, missing_ok=True)
        admission = ledger.claim(Claim(claim_id, "call", user, label, count, pool=pool), indexes, pid)
        gpus = None if admission.gpus is None else list(admission.gpus)
        return {"gpus": gpus, "position": admission.position, "reason": admission.reason}

    def release(self, user: str, claim_id: str) -> dict:
        """End ``user``'s claim ``claim_id``, queued or held."""
        ledger = GpuLedger(self.store)
        self._own(ledger, user, claim_id, missing_ok=False)
        ledger.release(claim_id)
        return {"claim_id": claim_id, "released": True}

    def queue(self) -> dict:
        """The ledger as every user of the hub sees it (:meth:`GpuLedger.describe`)."""
        return GpuLedger(self.store).describe()

    @staticmethod
    def _own(ledger: GpuLedger, user: str, claim_id: str, missing_ok: bool) -> None:
        held, queued = ledger.queue()
        owners = {c.claim_id: c.user for c in (*held, *queued)}
        if owners.get(claim_id, user if missing_ok else None) != user:
            raise NoSuchClaim(f"{user} has no GPU claim {claim_id!r}; `air queue` lists the claims")


def _check_owner(user: str, pid: int) -> None:
    """Refuse a claim held by a process that is not ``user``'s, where ``user`` is an account here (a claim could
    otherwise outlive its caller on a process that never ends)."""
    try:
        uid = pwd.getpwnam(user).pw_uid
    except KeyError:
        return  # a hub user with no account here: their kernels' accounts are the spawner's to say
    try:
        owner = psutil.Process(pid).uids().real
    except psutil.Error:
        owner = None
    if owner != uid:
        raise NotYourProcess(f"process {pid} is not {user}'s: a GPU claim is held by the caller's own kernel")


def _fields(body: dict) -> tuple[str, str, int, list[int], int]:
    claim_id, label, count = body.get("claim_id"), body.get("label", ""), body.get("count")
    indexes, pid = body.get("indexes"), body.get("pid")
    problems = []
    if not isinstance(claim_id, str) or not claim_id.startswith("call-") or not 5 < len(claim_id) <= MAX_ID:
        problems.append(f"claim_id: a string 'call-<hex>' of at most {MAX_ID} characters")
    if not isinstance(label, str) or len(label) > MAX_LABEL:
        problems.append(f"label: the call's name, at most {MAX_LABEL} characters")
    if not isinstance(body.get("pool", ""), str) or len(body.get("pool", "")) > MAX_LABEL:
        problems.append(f"pool: the Ray cluster's pool ('Ray cluster <address>'), at most {MAX_LABEL} characters")
    if not _whole(count) or count < 1:
        problems.append("count: how many GPUs, a whole number from 1")
    if not isinstance(indexes, list) or not all(_whole(i) and i >= 0 for i in indexes):
        problems.append("indexes: the GPU indexes the call may run on, e.g. [0, 1]")
    if not _whole(pid) or pid < 1 or not psutil.pid_exists(pid):
        problems.append("pid: the running process that holds the claim (the kernel's)")
    if problems:
        raise BadClaim("a GPU claim needs " + "; ".join(problems))
    return claim_id, label, count, indexes, pid


def _whole(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)
