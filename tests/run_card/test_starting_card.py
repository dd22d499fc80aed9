"""The first thing a tracked cell shows, in a real kernel: a starting card saying what the call waits for, which the
run card then replaces in the same output."""

from __future__ import annotations

import os
import pathlib

import pytest
from jupyter_client.manager import start_new_kernel

from jupyter_air.run_card.widget import WIDGET_VIEW_MIMETYPE

REPO_ROOT = pathlib.Path(__file__).resolve().parents[2]

DEFINE = """from jupyter_air import distributed

@distributed(gpus=2, experiment="starting-card")
def noop():
    return 0"""


@pytest.fixture
def kernel(store, tmp_path, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(REPO_ROOT), os.environ.get("PYTHONPATH")])))
    manager, client = start_new_kernel(kernel_name="python3", cwd=str(tmp_path))
    yield client
    client.stop_channels()
    manager.shutdown_kernel(now=True)


def printed(client, code: str) -> str:
    """What the cell printed on stdout."""
    msg_id = client.execute(code)
    out = []
    while True:
        msg = client.get_iopub_msg(timeout=180)
        if msg["parent_header"].get("msg_id") != msg_id:
            continue
        if msg["msg_type"] == "stream":
            out.append(msg["content"]["text"])
        if msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
            return "".join(out)


def displays(client, code: str) -> list[tuple[str, str, dict]]:
    """``(message type, display id, data)`` of every display message the cell sent, in order."""
    msg_id = client.execute(code)
    seen = []
    while True:
        msg = client.get_iopub_msg(timeout=180)
        if msg["parent_header"].get("msg_id") != msg_id:
            continue
        kind, content = msg["msg_type"], msg["content"]
        if kind in ("display_data", "update_display_data"):
            seen.append((kind, content.get("transient", {}).get("display_id"), content["data"]))
        if kind == "status" and content["execution_state"] == "idle":
            return seen


@pytest.mark.usefixtures("no_orphans")
def test_a_call_shows_its_starting_card_first_then_the_run_card_in_its_place(kernel):
    # Given a fresh kernel where a call was just defined (its fork server still importing PyTorch)
    assert displays(kernel, DEFINE) == []

    # When the call runs
    shown = displays(kernel, "noop.distributed()")

    # Then its first output is the starting card, saying what the call waits for, as text and HTML
    first_kind, card_id, first = shown[0]
    assert first_kind == "display_data" and card_id
    assert first["text/plain"].startswith("jupyter_air call: ")
    assert "jp-Air-runcard-starting" in first["text/html"]
    # And every later change (what it waits for, then the run card, then its final state) replaced that output
    assert all(kind == "update_display_data" and shown_id == card_id for kind, shown_id, _ in shown[1:])
    assert any(WIDGET_VIEW_MIMETYPE in data for _, _, data in shown[1:])
    assert ">finished</span>" in shown[-1][2]["text/html"]
    # And the kernel itself never imported torch: the fork server did
    assert printed(kernel, "import sys; print('torch' in sys.modules)") == "False\n"


@pytest.mark.usefixtures("no_orphans")
def test_a_call_that_cannot_start_says_so_in_its_starting_card(kernel):
    # Given a call whose argument cannot be sent to the ranks
    displays(kernel, DEFINE)

    # When it runs, Then its starting card says it did not start (the error itself is the cell's)
    shown = displays(kernel, "import threading\nnoop.distributed(threading.Lock())")
    assert [data["text/plain"].split(" (")[0] for _, _, data in shown] == [
        "jupyter_air call: starting",
        "jupyter_air call: did not start: DistributedError",
    ]
