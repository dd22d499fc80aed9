"""Failing, crashing, hung and interrupted calls: the error raised, the run's final status, no process left."""

from __future__ import annotations

import linecache
import os
import signal
import threading
import time

import pytest

from jupyter_air import DistributedError, distributed
from jupyter_air.training.errors import DistributedTimeout

pytestmark = pytest.mark.usefixtures("no_orphans")


def notebook_function(source: str, name: str, cell: str = "<ipython-input-7-f00d>"):
    """Define ``name`` the way a notebook cell does: code compiled from text that only linecache holds."""
    linecache.cache[cell] = (len(source), None, source.splitlines(keepends=True), cell)
    namespace = {"__name__": "__main__"}
    exec(compile(source, cell, "exec"), namespace)
    return namespace[name]


RAISING_CELL = """
def train(steps):
    import os, time
    import torch.distributed as dist
    dist.init_process_group("gloo")
    print("step 1 on rank", os.environ["RANK"], flush=True)
    dist.barrier()
    if os.environ["RANK"] == "1":
        raise ValueError(f"loss diverged <at> step {steps}")
    time.sleep(60)
"""


def test_a_raising_rank_names_rank_exception_and_notebook_source(store, runs_of, artifact_text):
    # Given a notebook-defined function whose rank 1 raises while rank 0 keeps working
    train = distributed(notebook_function(RAISING_CELL, "train"), gpus=2, experiment="fail-raise")

    # When it runs
    started = time.monotonic()
    with pytest.raises(DistributedError) as caught:
        train.distributed(3)

    # Then the error names the rank, its exit code and the exception, with the cell's own source line
    error = caught.value
    assert (error.rank, error.exitcode, error.exception_type) == (1, 1, "ValueError")
    assert "rank 1 failed (exited with code 1): ValueError: loss diverged <at> step 3" in str(error)
    assert 'raise ValueError(f"loss diverged <at> step {steps}")' in error.worker_traceback
    assert "<dynamic-code>" not in error.worker_traceback
    # And IPython shows the caller's own frame, the root cause and the rank's traceback, none of jupyter_air's
    shown = "\n".join(error._render_traceback_())
    assert "train.distributed(3)" in shown and "rank 1 failed (exited with code 1)" in shown
    assert 'raise ValueError(f"loss diverged <at> step {steps}")' in shown
    assert "jupyter_air/training" not in shown and "traceback.print_exception(sys.last_value)" in shown
    # And rank 0 was stopped rather than left sleeping
    assert time.monotonic() - started < 30
    # And the run is FAILED with the root cause as a tag, and both logs were kept
    (run,) = runs_of("fail-raise")
    assert run.info.status == "FAILED"
    assert "rank 1 failed" in run.data.tags["air.error"] and "ValueError" in run.data.tags["air.error"]
    assert "loss diverged" in artifact_text(run.info.run_id, "logs/node_0/rank_1.log")
    assert "step 1 on rank 0" in artifact_text(run.info.run_id, "logs/node_0/rank_0.log")


def hard_exit():
    if os.environ["RANK"] == "1":
        os._exit(3)
    time.sleep(60)


def test_a_rank_that_exits_without_an_exception(store, runs_of):
    # Given a rank that leaves with os._exit(3)
    # When the call runs, Then the error names the rank and exit code and says no exception was raised
    with pytest.raises(DistributedError, match="rank 1 exited with code 3 without raising") as caught:
        distributed(hard_exit, gpus=2, experiment="fail-exit").distributed()
    assert (caught.value.rank, caught.value.exitcode) == (1, 3)
    (run,) = runs_of("fail-exit")
    assert run.info.status == "FAILED"
    assert "exited with code 3" in run.data.tags["air.error"]


def hang(folder=None):
    if folder is not None:  # says it runs
        open(os.path.join(folder, f"rank{os.environ['RANK']}.runs"), "w").close()
    print("hanging", flush=True)
    time.sleep(600)


def test_a_hung_call_is_stopped_by_its_timeout(store, runs_of):
    # Given a call that hangs and a 3 s timeout
    started = time.monotonic()

    # When it runs, Then it is stopped, every worker with it, within seconds of the timeout
    with pytest.raises(DistributedTimeout, match="timeout=3"):
        distributed(hang, gpus=2, experiment="fail-timeout", timeout=3).distributed()
    assert time.monotonic() - started < 3 + 10
    (run,) = runs_of("fail-timeout")
    assert run.info.status == "FAILED"
    assert "DistributedTimeout" in run.data.tags["air.error"]


def test_an_interrupt_stops_every_worker_and_marks_the_run_killed(store, runs_of, tmp_path):
    # Given a hung call, and a kernel interrupt (SIGINT) arriving once both ranks run
    def interrupt_once_running():
        deadline = time.monotonic() + 120
        while len(list(tmp_path.glob("rank*.runs"))) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        os.kill(os.getpid(), signal.SIGINT)

    threading.Thread(target=interrupt_once_running, daemon=True).start()

    # When the interrupt arrives, Then KeyboardInterrupt is re-raised once every worker stopped
    with pytest.raises(KeyboardInterrupt) as caught:
        distributed(hang, gpus=2, experiment="fail-interrupt").distributed(str(tmp_path))
    # And IPython shows what happened, not jupyter_air's frames
    shown = "\n".join(caught.value._render_traceback_())
    assert "every worker was stopped and the run marked KILLED" in shown and "jupyter_air/training" not in shown
    (run,) = runs_of("fail-interrupt")
    assert run.info.status == "KILLED"


STUBBORN = r"""
import os, signal, sys, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
if sys.argv[1] == "daemon" and os.fork():
    os._exit(0)                         # the daemon's parent exits at once: it is re-parented
if sys.argv[1] == "daemon":
    os.setsid()                         # and leaves the rank's session
print(sys.argv[1], "ignores SIGTERM", flush=True)
time.sleep(600)
"""


def start_stubborn_grandchildren():
    import subprocess
    import sys

    if os.environ["RANK"] == "0":
        for kind in ("child", "daemon"):
            subprocess.Popen([sys.executable, "-c", STUBBORN, kind])
    time.sleep(600)


def test_a_stopped_call_leaves_no_grandchild_even_one_ignoring_sigterm_or_detached(store, runs_of):
    # Given a rank that starts a child ignoring SIGTERM and a detached daemon (re-parented, own session)
    train = distributed(start_stubborn_grandchildren, gpus=2, experiment="fail-stubborn", timeout=6)

    # When the call is stopped by its timeout
    with pytest.raises(DistributedTimeout):
        train.distributed()

    # Then the run is FAILED, and no process is left (counted by the no_orphans fixture)
    (run,) = runs_of("fail-stubborn")
    assert run.info.status == "FAILED"
