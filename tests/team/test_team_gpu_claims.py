"""The team's GPU claims as the service answers them (`TeamGpus`, on a real job store): a claim is held by a process
of the caller's own account where the hub user is an account here, so nobody keeps GPUs on a process that is not
theirs."""

from __future__ import annotations

import os
import subprocess

import pytest

from jupyter_air.team.gpu_claims import NotYourProcess, TeamGpus
from jupyter_air.workloads.state.ledger import GpuLedger
from jupyter_air.workloads.state.store import JobStore


def _body(pid: int) -> dict:
    return {"claim_id": "call-0123456789ab", "label": "train", "count": 1, "indexes": [0, 1], "pid": pid}


def test_a_claim_is_held_by_the_callers_own_process_where_the_hub_user_is_an_account_here(tmp_path):
    # Given the service's ledger, and `nobody`, a hub user who is also an account of this machine
    store = JobStore(tmp_path / "air")
    gpus = TeamGpus(store)

    # When nobody's claim names a process of another account (this test's), Then it is refused, queuing nothing
    with pytest.raises(NotYourProcess, match=rf"process {os.getpid()} is not nobody's"):
        gpus.claim("nobody", _body(os.getpid()))
    assert GpuLedger(store).queue() == ([], [])

    # When it names a process of nobody's own, Then it is given its GPU
    sleeper = subprocess.Popen(["sleep", "60"], user="nobody")
    try:
        assert gpus.claim("nobody", _body(sleeper.pid))["gpus"] == [0]
        assert [(c.user, c.held) for c in GpuLedger(store).queue()[0]] == [("nobody", True)]
    finally:
        sleeper.kill()
        sleeper.wait()
    # And once that process has ended, the claim is dropped at the next look
    assert GpuLedger(store).queue() == ([], [])


def test_a_hub_user_without_an_account_here_claims_with_any_live_process(tmp_path):
    # Given a hub user that is no account of this machine (their kernels' accounts are the spawner's)
    gpus = TeamGpus(JobStore(tmp_path / "air"))

    # When their claim names a live process, Then it is given its GPU
    assert gpus.claim("hub-user-without-account", _body(os.getpid()))["gpus"] == [0]
