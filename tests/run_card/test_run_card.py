"""The run card without a kernel or a store: its state machine, bounded output, snapshots and throttled updates."""

from __future__ import annotations

import io
import time

import pytest
from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output

from jupyter_air.run_card import card as card_module
from jupyter_air.run_card.card import RunCard, ending_for
from jupyter_air.run_card.render import card_json, render_html, render_text, spark_path
from jupyter_air.run_card.state import FAILED, FINISHED, KILLED, CardState, Header, RunRef
from jupyter_air.run_card.widget import WIDGET_VIEW_MIMETYPE
from jupyter_air.tracking.lifecycle import RunStopped
from jupyter_air.training.errors import DistributedError

HOSTILE = "<script>alert(1)</script>"


class Clock:
    """Seconds since the epoch, moved by the test."""

    def __init__(self, now: float = 1_764_000_000.0):
        self.now = now

    def __call__(self) -> float:
        return self.now


RUN = RunRef(
    id="abc123",
    name="baseline",
    url="/lab/jupyter-air/runs/abc123/open",
    experiment_name="mnist",
    experiment_url="/lab/jupyter-air/experiments/1/open",
)


def header(**changes) -> Header:
    values = {"run": RUN, "kind": "distributed", "world_size": 2, "nodes": 1, "gpus": ("0", "1"), **changes}
    return Header(**values)


def test_a_running_card_finishes_and_its_snapshot_says_so():
    # Given a running card of a 2-rank call on 2 GPUs, with a line from each rank
    clock = Clock()
    state = CardState(header(), clock=clock)
    state.add_lines([(0, "epoch 1"), (1, "epoch 1 done")])
    running = card_json(state)
    assert running["status"] == "RUNNING" and running["ended_ms"] is None
    assert [r["state"] for r in running["rows"]] == ["running", "running"]

    # When it ends FINISHED 12.5 s later
    clock.now += 12.5
    state.finish(FINISHED)

    # Then every rank is finished, and the static HTML and text show the status, duration and placement
    data = card_json(state)
    assert data["status"] == "FINISHED" and data["ended_ms"] - data["started_ms"] == 12_500
    assert [(r["name"], r["state"], r["line"]) for r in data["rows"]] == [
        ("rank 0", "finished", "epoch 1"),
        ("rank 1", "finished", "epoch 1 done"),
    ]
    html = render_html(data)
    assert ">finished</span> · 12.5s · 2 ranks on 1 node · GPUs 0, 1" in html
    assert "Stop" not in html
    assert render_text(data).splitlines()[0] == (
        "MLflow run 'baseline' (abc123) in experiment 'mnist': finished after 12.5s · /lab/jupyter-air/runs/abc123/open"
    )


def test_a_failed_call_names_the_node_rank_exit_code_and_root_cause():
    # Given a running card, When the call fails because rank 1 raised
    state = CardState(header(gpus=()), clock=Clock())
    error = DistributedError(
        "rank 1 failed (exited with code 1): ValueError: boom",
        rank=1,
        exitcode=1,
        exception_type="ValueError",
        exception_message="boom",
    )
    reason, failure = ending_for(error)
    state.finish(FAILED, reason=reason, failure=failure)

    # Then the card is red with where and why; rank 1 failed and rank 0 was stopped
    data = card_json(state)
    assert data["failure"] == {"message": "ValueError: boom", "rank": 1, "node": 0, "exitcode": 1}
    assert [(r["state"], r["exitcode"]) for r in data["rows"]] == [("stopped", None), ("failed", 1)]
    assert "<td>failed (exit code 1)</td>" in render_html(data)
    html = render_html(data)
    assert 'class="jp-Air-runCard jp-Air-runCard-failed"' in html and "#cf222e" in html
    assert "Failed on node 0, rank 1, exit code 1: ValueError: boom" in html
    assert "· 2 ranks on 1 node · CPU" in html
    assert "  Failed on node 0, rank 1, exit code 1: ValueError: boom" in render_text(data)


def test_a_failure_without_a_rank_shows_its_root_cause():
    # Given a %%air_run cell that raised, Then the card names the exception and no rank
    reason, failure = ending_for(RuntimeError("cell failed"))
    assert reason is None and failure.message == "RuntimeError: cell failed" and failure.rank is None


@pytest.mark.parametrize(
    ("exc", "reason"),
    [
        (RunStopped("stopped with the Stop button"), "stopped with the Stop button"),
        (KeyboardInterrupt(), "interrupted"),
    ],
)
def test_a_stopped_or_interrupted_call_is_killed_with_its_reason(exc, reason):
    # Given a running card, When the call is stopped or interrupted
    state = CardState(header(), clock=Clock())
    shown_reason, failure = ending_for(exc)
    state.finish(KILLED, reason=shown_reason, failure=failure)

    # Then it is killed, says why, and no rank is marked failed
    data = card_json(state)
    assert (data["status"], data["reason"], data["failure"]) == ("KILLED", reason, None)
    assert {r["state"] for r in data["rows"]} == {"stopped"}
    assert f'<div class="jp-Air-runCard-reason">{reason}</div>' in render_html(data)


def test_a_card_ends_once_and_only_in_an_end_state():
    # Given a running card
    state = CardState(header(), clock=Clock())
    # Then it cannot end RUNNING
    with pytest.raises(ValueError, match="ends FINISHED, FAILED or KILLED"):
        state.finish("RUNNING")
    # And once ended, a later end changes nothing
    state.finish(KILLED, reason="interrupted")
    revision = state.revision
    state.finish(FINISHED)
    assert (state.status, state.reason, state.revision) == (KILLED, "interrupted", revision)


def test_each_rank_keeps_only_its_last_lines_in_the_order_written():
    # Given a card that keeps 3 lines per rank
    state = CardState(header(), max_lines_per_rank=3, clock=Clock())

    # When rank 0 writes 5 lines and rank 1 one line in between, and rank 1 one very long line
    state.add_lines([(0, "a0"), (0, "a1"), (1, "b0"), (0, "a2"), (0, "a3"), (0, "a4")])
    state.add_lines([(1, "x" * 5000)])

    # Then the output holds each rank's last 3 lines in the order written, and counts the lines let go
    assert state.output().splitlines()[:4] == ["[rank 1] b0", "[rank 0] a2", "[rank 0] a3", "[rank 0] a4"]
    assert state.dropped_lines() == 2
    long_line = state.output().splitlines()[-1]
    assert long_line.startswith("[rank 1] xxx") and long_line.endswith("…") and len(long_line) < 2100
    data = card_json(state)
    assert data["dropped_lines"] == 2
    assert "Output of every rank; 2 earlier line(s) only in the run&#x27;s logs/ artifacts" in render_html(data)


def test_many_ranks_show_one_row_per_node():
    # Given a call of 32 ranks on 2 nodes, rank 20 printing last
    state = CardState(header(world_size=32, nodes=2), clock=Clock())
    state.add_lines([(3, "node zero's line"), (20, "node one's line")])

    # When rank 20 fails
    state.finish(FAILED, failure=ending_for(DistributedError("x", rank=20, exitcode=2), nodes=2)[1])

    # Then there is one row per node with its last line, and the failed node says so
    assert [(r["name"], r["state"], r["line"]) for r in state.rows()] == [
        ("node 0 (ranks 0-15)", "stopped", "node zero's line"),
        ("node 1 (ranks 16-31)", "failed", "node one's line"),
    ]


def test_names_and_links_are_escaped():
    # Given a run whose experiment and run names and link carry markup
    state = CardState(
        header(
            run=RunRef(
                id="abc123",
                name="<img src=x onerror=alert(2)>",
                url='/mlflow/#/experiments/1/runs/abc"><script>',
                experiment_name=HOSTILE,
                experiment_url=None,
            )
        ),
        clock=Clock(),
    )
    state.add_lines([(0, HOSTILE)])

    # Then the HTML shows them as text, never as markup
    html = render_html(card_json(state))
    assert "<script>" not in html and "<img" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html and "&lt;img src=x onerror=alert(2)&gt;" in html
    assert 'href="/mlflow/#/experiments/1/runs/abc&quot;&gt;&lt;script&gt;"' in html


def test_sparklines_draw_left_to_right_within_their_box():
    # Given falling values, Then the path starts high on the left and ends low on the right
    assert spark_path([3.0, 2.0, 1.0]) == "M0.0,1.0L50.0,10.0L100.0,19.0"
    # And a flat or single value is a level line, non-finite values are left out, nothing draws nothing
    assert spark_path([2.0, 2.0]) == "M0.0,10.0L100.0,10.0"
    assert spark_path([float("nan"), 5.0]) == "M0,10.0H100"
    assert spark_path([]) == ""


def test_outside_a_kernel_the_card_is_plain_text(capsys):
    # Given the card of a call made from a script
    out = io.StringIO()
    card = RunCard(CardState(header(), clock=Clock()), None, "text", stoppable=True, out=out)

    # When it is shown, ranks write lines, and the call finishes
    card.show()
    card.add_lines([(0, "hello"), (1, "world")])
    card.finish(FINISHED, None)

    # Then the run's line, the ranks' lines as they came and the final summary are printed
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("MLflow run 'baseline' (abc123) in experiment 'mnist': running after")
    assert lines[1:3] == ["[rank 0] hello", "[rank 1] world"]
    assert "finished after" in lines[3] and lines[-1] == "  rank 1: finished: world"


def test_widget_updates_are_throttled_and_the_end_leaves_only_a_static_snapshot():
    # Given a card shown as a widget (in an IPython shell, without a kernel) and its updates counted
    shell = InteractiveShell.instance()
    assert shell is not None
    card = RunCard(CardState(header()), None, "widget", stoppable=True)
    with capture_output() as shown:
        card.show()
        widget = card._widget
        model_id = widget.model_id
        pushes = []
        widget.observe(lambda change: pushes.append(change["new"]), names="card")

        # When the ranks write a line every millisecond for one second
        started, sent = time.monotonic(), 0
        while time.monotonic() - started < 1.0:
            card.add_lines([(sent % 2, f"line {sent}")])
            sent += 1
            time.sleep(0.001)

        # Then the widget got at most one update per PUSH_SECONDS, the last one with the newest line
        assert 1 <= len(pushes) <= 1.0 / card_module.PUSH_SECONDS + 1
        deadline = time.monotonic() + 10
        while f"line {sent - 1}" not in widget.card["output"] and time.monotonic() < deadline:
            time.sleep(0.05)
        assert f"line {sent - 1}" in widget.card["output"]
        assert widget.card["stoppable"] is True and sent > 100

        # When the call finishes
        card.finish(FINISHED, None)

    # Then the output first held the widget view with a static snapshot, then only the final snapshot
    first, last = shown.outputs[0], shown.outputs[-1]
    assert set(first.data) == {WIDGET_VIEW_MIMETYPE, "text/html", "text/plain"}
    assert first.data[WIDGET_VIEW_MIMETYPE]["model_id"] == model_id
    assert last.update and set(last.data) == {"text/html", "text/plain"}
    assert ">finished</span>" in last.data["text/html"] and f"line {sent - 1}" in last.data["text/html"]
    # And the widget is closed (its state leaves the notebook) and its thread is gone
    assert widget.comm is None and not card._thread.is_alive()
