"""`air logs`: --tail, --follow while the workload writes, --download-to (never outside DIR), range errors."""

from __future__ import annotations

import json

import pytest
from workload_helpers import write_workload

TICKS = 15


@pytest.fixture(scope="module")
def followed(module_air, tmp_path_factory):
    """A workload printing a line every 0.1 s, followed with `air logs --follow -o json` from its start."""
    folder = tmp_path_factory.mktemp("logs")
    path = write_workload(
        folder, experiment_name="air-tests-logs", command=f"for i in $(seq 1 {TICKS}); do echo tick $i; sleep 0.1; done"
    )
    job_id = module_air.submit(path)
    follow = module_air.popen("logs", job_id, "--follow", "-o", "json")
    out, err = follow.communicate(timeout=120)
    return {
        "job_id": job_id,
        "code": follow.returncode,
        "stderr": err,
        "lines": [json.loads(x) for x in out.splitlines()],
    }


def test_follow_streams_every_line_until_the_attempt_ends(followed, module_air):
    # Given `air logs --follow` started before the job had any output
    # Then it exited 0 by itself once the attempt ended, with every line once, in order, as JSON objects
    assert followed["code"] == 0, followed["stderr"]
    assert [x["line"] for x in followed["lines"]] == [f"tick {i}" for i in range(1, TICKS + 1)]
    assert all(x["node"] == 0 and x["attempt"] == 0 for x in followed["lines"])
    stamps = [x["ts"] for x in followed["lines"]]
    assert all(isinstance(t, int) for t in stamps) and stamps == sorted(stamps)
    assert module_air.job(followed["job_id"])["status"] == "SUCCEEDED"


def test_tail(followed, module_air):
    job_id = followed["job_id"]
    assert module_air("logs", job_id, "--tail", "3", check=True).stdout.splitlines() == [
        "tick 13",
        "tick 14",
        "tick 15",
    ]
    assert module_air("logs", job_id, "--tail", "0", check=True).stdout == ""
    last = [
        json.loads(x) for x in module_air("logs", job_id, "--tail", "1", "-o", "json", check=True).stdout.splitlines()
    ]
    assert last == [followed["lines"][-1]]


def test_follow_of_an_ended_attempt_prints_and_returns(followed, module_air):
    out = module_air("logs", followed["job_id"], "--follow", "--tail", "2", check=True).stdout
    assert out.splitlines() == ["tick 14", "tick 15"]


def test_download_to_writes_under_the_folder(followed, module_air, tmp_path):
    # When the output is downloaded
    result = module_air.json("logs", followed["job_id"], "--download-to", str(tmp_path / "out"))

    # Then one file lands under DIR/<job>/attempt_0/node_0 with the whole output
    expected = tmp_path / "out" / followed["job_id"] / "attempt_0" / "node_0" / "output.log"
    assert result == {"job_run_id": followed["job_id"], "attempt": 0, "node": 0, "path": str(expected)}
    assert expected.read_text().splitlines() == [f"tick {i}" for i in range(1, TICKS + 1)]


def test_download_never_writes_outside_the_folder(followed, module_air, tmp_path):
    # Given a target folder and an outside folder
    target, outside = tmp_path / "target", tmp_path / "outside"
    target.mkdir()
    outside.mkdir()

    # When the job id tries to climb out of the folder
    climb = module_air("logs", "../outside", "--download-to", str(target))
    # Then it is refused as an unknown job run (exit 2), and nothing is written anywhere
    assert climb.returncode == 2 and "no job run '../outside'" in climb.stderr

    # When the folder holds a link named like the job that points outside
    (target / followed["job_id"]).symlink_to(outside)
    linked = module_air("logs", followed["job_id"], "--download-to", str(target))
    # Then air refuses to write through it (exit 2: the folder given cannot be used)
    assert linked.returncode == 2 and "symbolic link" in linked.stderr
    assert list(outside.iterdir()) == []
    assert [p.name for p in target.iterdir()] == [followed["job_id"]]


@pytest.mark.parametrize(
    "args, message",
    [
        (["--node", "1"], "--node 1 is out of range: {job} runs on 1 node (node 0)"),
        (["--retry", "1"], "--retry 1 is out of range: {job} has attempts 0 to 0 (max_retries 0)"),
        (["--download-to", "x", "--follow"], "--download-to writes the whole file; drop --follow and --tail"),
    ],
)
def test_out_of_range_node_or_attempt_is_a_clear_error(followed, module_air, args, message):
    result = module_air("logs", followed["job_id"], *args)
    assert result.returncode == 2
    assert message.format(job=followed["job_id"]) in result.stderr
