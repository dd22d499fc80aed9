"""On a team's hub, users' notebook calls take their GPUs from the air-jobs service's ledger, the one the team's jobs
take theirs from: alice's call waits behind bob's job, as alice, and nobody else can end her claim; three users'
jobs and calls at once never get the same GPU."""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
import threading

import pytest
from team_calls import air, call, finished, service, team_hub
from waiting import wait_for

from jupyter_air.training import gpu_claim
from jupyter_air.training.gpu_claim import GpusBusy
from jupyter_air.workloads.state.ledger import GpuLedger
from jupyter_air.workloads.state.store import JobStore


@pytest.fixture(scope="module")
def team(tmp_path_factory):
    """The hub and its air-jobs service, whose jobs see the demo's 2 simulated GPUs."""
    with team_hub(tmp_path_factory.mktemp("team"), {"JUPYTER_AIR_GPU_SOURCE": "simulated"}) as hub:
        hub.ready()
        yield hub, None, hub.tokens()


@pytest.fixture
def alices_kernel(team, monkeypatch):
    """This process as alice's kernel on the hub: the service's address and her token, the demo's GPUs."""
    hub, _, tokens = team
    monkeypatch.setenv("AIR_JOBS_URL", f"{hub.url}/services/air-jobs/")
    monkeypatch.setenv("JUPYTERHUB_API_TOKEN", tokens["alice"])
    monkeypatch.setenv("JUPYTER_AIR_GPU_SOURCE", "simulated")


@pytest.mark.usefixtures("alices_kernel")
def test_alices_call_waits_behind_bobs_job_on_the_services_ledger_and_only_she_ends_her_claim(team, tmp_path):
    hub, _, _ = team
    ledger = GpuLedger(JobStore(hub.folder / "air"))
    # Given bob's job, sent to the service, holding both GPUs until told to end
    (tmp_path / "hold.yaml").write_text(
        f"experiment_name: team-gpus\ncommand: while [ ! -e {tmp_path}/go ]; do sleep 0.2; done\n"
        "compute:\n  num_accelerators: 2\n"
    )
    job = service(team, "bob").submit(tmp_path, "hold.yaml")
    try:
        wait_for(lambda: ledger.queue()[0], "bob's job to hold its GPUs")

        # When alice's call asks not to wait, Then it is refused with who holds the GPUs, and nothing stays queued
        with pytest.raises(GpusBusy, match=rf"1st in line for 1 GPU; held by bob's job {job['job_run_id']}"):
            gpu_claim.take(1, 0, "alices-call", False, print)
        assert ledger.queue()[1] == []

        # When her call waits, Then it is queued in the service's ledger as hers
        held = []
        caller = threading.Thread(target=lambda: held.append(gpu_claim.take(1, 0, "alices-call", True, print)))
        caller.start()
        (claim,) = wait_for(lambda: ledger.queue()[1], "alice's call to queue")
        assert (claim.user, claim.kind, claim.label, claim.count) == ("alice", "call", "alices-call", 1)
        # And bob can neither end her claim nor take it over by its id
        status, answer = call(team, "bob", "DELETE", f"gpus/claims/{claim.claim_id}")
        assert status == 404 and "bob has no GPU claim" in answer["message"]
        body = {"claim_id": claim.claim_id, "label": "mine", "count": 1, "indexes": [0, 1], "pid": 1}
        assert call(team, "bob", "POST", "gpus/claims", body)[0] == 404
        assert [c.user for c in ledger.queue()[1]] == ["alice"]
        # And `air queue` in bob's terminal shows the team's ledger: his job holding both GPUs, her call waiting
        shown = json.loads(air(team, "bob", "queue", "-o", "json").stdout)
        assert [(c["user"], c["kind"], c["gpus"]) for c in shown["held"]] == [("bob", "job", [0, 1])]
        assert [(c["user"], c["label"], c["position"]) for c in shown["queued"]] == [("alice", "alices-call", 1)]
    finally:
        (tmp_path / "go").touch()

    # Then once bob's job ends, her call holds one GPU, sees only it, and gives it back
    assert finished(service(team, "bob"), job)["status"] == "SUCCEEDED"
    caller.join(60)
    (gpus,) = held
    assert gpus.gpus == (0,) and gpus.environment["CUDA_VISIBLE_DEVICES"] == "0"
    assert [(c.user, c.held) for c in ledger.queue()[0]] == [("alice", True)]
    gpus.release()
    assert ledger.queue() == ([], [])


def test_a_bad_claim_names_every_field_to_fix_and_queues_nothing(team):
    hub, _, _ = team
    # When alice's request has a made-up id, no count, a GPU index of -1, a process that does not exist and a pool
    # that is no name
    body = {"claim_id": "x", "indexes": [-1], "pid": 2**22 + 7, "pool": ["Ray"]}
    status, answer = call(team, "alice", "POST", "gpus/claims", body)

    # Then it is refused with what each field needs, and the ledger is untouched
    assert status == 400
    fields = (
        "claim_id: a string 'call-<hex>'",
        "count: how many GPUs",
        "indexes: the GPU indexes",
        "pid: the",
        "pool: ",
    )
    for field in fields:
        assert field in answer["message"]
    assert GpuLedger(JobStore(hub.folder / "air")).queue() == ([], [])


@pytest.fixture
def air_config(team, monkeypatch) -> dict:
    """Bob's Jupyter server: configured for the team's job service, his hub token in its environment."""
    hub, _, tokens = team
    monkeypatch.setenv("JUPYTERHUB_API_TOKEN", tokens["bob"])
    monkeypatch.setenv("AIR_JOBS_URL", "")  # the server sets it for its kernels: restored after the test
    return {"gpu_source": "none", "mlflow_ui_autostart": False, "jobs_service_url": f"{hub.url}/services/air-jobs/"}


async def test_the_gpu_panels_queue_is_the_teams_in_bobs_jupyter_server(team, jp_fetch):
    # Given alice's call holding GPU 1 of the team's ledger
    body = {"claim_id": "call-0123456789ab", "label": "alices-notebook", "count": 1, "indexes": [1], "pid": os.getpid()}
    status, given = call(team, "alice", "POST", "gpus/claims", body)
    assert (status, given["gpus"]) == (200, [1])
    try:
        # When bob's GPU panel reads the queue from his Jupyter server
        shown = json.loads((await jp_fetch("jupyter-air", "gpu", "queue")).body)

        # Then it is the team's: alice's call on GPU 1
        assert [(c["user"], c["label"], c["gpus"]) for c in shown["held"]] == [("alice", "alices-notebook", [1])]
    finally:
        assert call(team, "alice", "DELETE", "gpus/claims/call-0123456789ab")[0] == 200


#: A call in a user's kernel: holds 1 GPU from the team's ledger, notes what it saw, holds it a second, gives it back.
CALL = """
import sys, time
from jupyter_air.training import gpu_claim
held = gpu_claim.take(1, 0, "mixed-call", True, lambda what: None)
start = time.time()
time.sleep(1)
with open(sys.argv[1], "a") as out:
    out.write(f"{start} {time.time()} {held.environment['CUDA_VISIBLE_DEVICES']} {len(held.gpus)}\\n")
held.release()
"""
#: A job's command: the same notes, from what its process sees.
HOLD = 'start=$(date +%s.%N); sleep 1; echo "$start $(date +%s.%N) $CUDA_VISIBLE_DEVICES {count}" >> {out}'


def test_three_users_jobs_and_calls_at_once_never_get_the_same_gpu(team, tmp_path):
    # Given alice, bob and carol each sending a job (bob's on both GPUs) and making a notebook call at once, on the
    # team's 2 GPUs
    hub, _, tokens = team
    seen = tmp_path / "seen.txt"
    jobs, calls = [], []
    for user, count in (("alice", 1), ("bob", 2), ("carol", 1)):
        command = HOLD.format(count=count, out=seen)
        (tmp_path / f"{user}.yaml").write_text(
            f"experiment_name: team-gpus-mixed\ncommand: '{command}'\ncompute:\n  num_accelerators: {count}\n"
        )
        jobs.append((user, service(team, user).submit(tmp_path, f"{user}.yaml")))
        env = {**os.environ, "AIR_JOBS_URL": f"{hub.url}/services/air-jobs/", "JUPYTERHUB_API_TOKEN": tokens[user]}
        env["JUPYTER_AIR_GPU_SOURCE"] = "simulated"
        calls.append(subprocess.Popen([sys.executable, "-c", CALL, str(seen)], env=env))

    # When all of it has run
    for user, job in jobs:
        assert finished(service(team, user), job)["status"] == "SUCCEEDED"
    assert [c.wait(timeout=120) for c in calls] == [0, 0, 0]

    # Then every piece of work saw exactly the GPUs it asked for, and no GPU was used by two at the same time
    spans = []
    for line in seen.read_text().splitlines():
        start, end, visible, count = line.split()
        gpus = [int(g) for g in visible.split(",")]
        assert len(gpus) == int(count), line
        spans += [(gpu, float(start), float(end)) for gpu in gpus]
    assert len(spans) == 1 + 2 + 1 + 3
    for gpu in (0, 1):
        held = sorted((start, end) for g, start, end in spans if g == gpu)
        assert all(earlier[1] <= later[0] for earlier, later in itertools.pairwise(held)), (gpu, held)
    assert GpuLedger(JobStore(hub.folder / "air")).queue() == ([], [])
