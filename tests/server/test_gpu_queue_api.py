"""The GPU queue route, against a real Jupyter server and a real job store: what `air queue -o json` prints."""

from __future__ import annotations

import json

from jupyter_air.workloads.state.fair_share import Claim
from jupyter_air.workloads.state.ledger import GpuLedger
from jupyter_air.workloads.state.quota import Quota
from jupyter_air.workloads.state.store import JobStore


async def test_the_queue_in_order_with_each_ones_place_and_reason(jp_fetch, tmp_path, monkeypatch):
    # Given an AIR_HOME without a job store, When the queue is asked, Then it is empty and nothing is created
    home = tmp_path / "air"
    monkeypatch.setenv("AIR_HOME", str(home))
    assert json.loads((await jp_fetch("jupyter-air", "gpu", "queue")).body) == {
        "held": [],
        "queued": [],
        "recent_gpu_hours": {},
        "shared_gpus": [],
    }
    assert not (home / "jobs.db").exists()

    # Given alice's job holding both GPUs, then a call of bob's and a job of carol's waiting
    ledger = GpuLedger(JobStore(home), Quota())
    ledger.claim(Claim("a", "job", "alice", "job-a", 2), [0, 1])
    ledger.claim(Claim("b", "call", "bob", "train", 1), [0, 1])
    ledger.claim(Claim("c", "job", "carol", "job-c", 2), [0, 1])

    # When the queue is asked
    answer = json.loads((await jp_fetch("jupyter-air", "gpu", "queue")).body)

    # Then the holder and its GPUs come first, then the waiting ones in order, each saying why it waits
    (held,) = answer["held"]
    assert (held["user"], held["kind"], held["label"], held["gpus"]) == ("alice", "job", "job-a", [0, 1])
    assert [(q["position"], q["user"], q["kind"], q["label"], q["count"]) for q in answer["queued"]] == [
        (1, "bob", "call", "train", 1),
        (2, "carol", "job", "job-c", 2),
    ]
    assert answer["queued"][1]["reason"].startswith("2nd in line for 2 GPUs; held by alice's job job-a since ")
