"""Which notebook holds which Ray nodes: registrations of kept nodes, listed by the server and released from it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading

import pytest
from tornado.httpclient import HTTPClientError

from jupyter_air.cluster.held import holders, request_release, waiting_hint
from jupyter_air.training import kept

NODES = [
    {"node": 0, "hostname": "gpu-1", "ip": "10.0.0.1", "ray_node_id": "a" * 56},
    {"node": 1, "hostname": "gpu-2", "ip": "10.0.0.2", "ray_node_id": "b" * 56},
]


@pytest.fixture
def air_home(tmp_path, monkeypatch):
    monkeypatch.setenv("AIR_HOME", str(tmp_path / "air"))
    return tmp_path / "air"


async def _idle_holders(jp_fetch) -> dict:
    return json.loads((await jp_fetch("jupyter-air", "gpu", "idle-holders")).body)


async def test_a_kernel_keeping_nodes_is_listed_with_its_notebook_and_released_on_request(
    jp_fetch, jp_serverapp, air_home
):
    # Given a real kernel of a notebook that keeps two Ray nodes (its registration, as a finished call makes it)
    body = json.dumps({"path": "work/train.ipynb", "type": "notebook", "name": "t", "kernel": {"name": "python3"}})
    session = json.loads((await jp_fetch("api", "sessions", method="POST", body=body)).body)
    kernel = jp_serverapp.kernel_manager.get_kernel(session["kernel"]["id"])
    client = kernel.client()
    client.start_channels()
    try:
        await client.wait_for_ready(timeout=120)  # shell and IOPub connected: a reply sent before is lost
        code = f"from jupyter_air.cluster.held import Held; held = Held({NODES!r}, '1 CPU, 2 GPU', 'auto', 300)"
        reply = await client.execute_interactive(code, timeout=60)
        assert reply["content"]["status"] == "ok"

        # When the panel reads the holders
        listed = (await _idle_holders(jp_fetch))["node_holders"]

        # Then the kernel is named with its notebook, the nodes it keeps, since when and until when
        (row,) = listed
        assert row["pid"] == kernel.provisioner.pid and row["kernel_id"] == session["kernel"]["id"]
        assert row["path"] == "work/train.ipynb" and row["nodes"] == NODES and row["share"] == "1 CPU, 2 GPU"
        assert row["until_ms"] - row["since_ms"] == 300_000 and row["parked"] is False

        # And Release reaches the kernel, which sees the request
        release = ("jupyter-air", "gpu", "held-nodes", str(row["pid"]), "release")
        response = await jp_fetch(*release, method="POST", body=b"")
        assert json.loads(response.body) == {"pid": row["pid"], "release_requested": True}
        reply = await client.execute_interactive("assert held.release_requested(); held.close()", timeout=60)
        assert reply["content"]["status"] == "ok"
        assert (await _idle_holders(jp_fetch))["node_holders"] == []
    finally:
        client.stop_channels()
        await jp_fetch("api", "sessions", session["id"], method="DELETE")


async def test_nothing_to_release_is_a_404_and_a_dead_holder_is_forgotten(jp_fetch, air_home):
    # Given a registration left by a process that died
    code = f"from jupyter_air.cluster.held import Held; Held({NODES!r}, '2 GPU', 'auto', 300)"
    subprocess.run([sys.executable, "-c", code], check=True)
    assert len(list((air_home / "held-nodes").glob("*.json"))) == 1
    # When the holders are read, Then it is not listed, and its file is gone
    assert (await _idle_holders(jp_fetch))["node_holders"] == []
    assert list((air_home / "held-nodes").iterdir()) == []
    # And releasing a process that keeps nothing says so
    with pytest.raises(HTTPClientError) as refused:
        await jp_fetch("jupyter-air", "gpu", "held-nodes", str(os.getpid()), "release", method="POST", body=b"")
    assert refused.value.code == 404
    assert "keeps no Ray nodes" in json.loads(refused.value.response.body)["message"]


class _Group:
    """Stands for a placed NodeGroup: where its actors run, and whether it was closed (freeing the nodes)."""

    def __init__(self):
        self.infos = [type("Info", (), {"to_json": lambda self, n=n: n})() for n in NODES]
        self.share = {"CPU": 1, "GPU": 2}
        self.closed = False
        self.freed = threading.Event()

    def close(self):
        self.closed = True
        self.freed.set()


def test_kept_nodes_are_registered_freed_on_request_and_unregistered(air_home, monkeypatch):
    # Given a notebook that keeps the nodes of its last call
    monkeypatch.setenv("JPY_SESSION_NAME", "work/train.ipynb")
    group = _Group()
    kept.Kept.keep(("shape",), group, "10.0.0.1:6379")
    try:
        (record,) = holders()
        assert record["pid"] == os.getpid() and record["notebook"] == "work/train.ipynb"
        assert record["share"] == "1 CPU, 2 GPU" and record["address"] == "10.0.0.1:6379"
        # Then a job waiting for nodes says who keeps them and how to free them
        hint = waiting_hint()
        assert "notebook work/train.ipynb (process" in hint and "keeps 2 node(s) (gpu-1, gpu-2)" in hint
        assert "`release_nodes()` in that notebook" in hint and "shutting down its kernel" in hint
        # When its release is asked for (the GPU panel's Release)
        assert request_release(os.getpid())
        # Then the kept actors are closed within a look or two, and nothing is left registered
        assert group.freed.wait(10)
        assert kept.Kept.group is None and holders() == [] and waiting_hint() == ""
    finally:
        kept.release_nodes()


def test_kept_nodes_expire_after_the_keep_time(air_home, monkeypatch):
    # Given a keep time of a fraction of a second
    monkeypatch.setattr(kept, "KEEP_SECONDS", 0.3)
    group = _Group()
    kept.Kept.keep(("shape",), group, "auto")
    # When it passes, Then the nodes are freed and unregistered without anyone asking
    assert group.freed.wait(10)
    assert holders() == []


def test_taking_kept_nodes_for_the_next_call_unregisters_them(air_home):
    # Given kept nodes, When the next call of the same shape takes them
    group = _Group()
    kept.Kept.keep(("shape",), group, "auto")
    taken = kept.Kept.take(("shape",))
    # Then it gets them, still open, and they are no longer listed as kept
    assert taken is group and not group.closed
    assert holders() == []
