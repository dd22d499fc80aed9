"""``.distributed(remote=True)``: a call run as a job that outlives its kernel, followed again with ``attach``."""

from __future__ import annotations

import os
import pathlib
import signal
import threading
import time

import nbformat
import psutil
import pytest
from nbclient import NotebookClient
from notebook_helpers import outputs_text

from jupyter_air.format import duration
from jupyter_air.training import zygote_client
from jupyter_air.workloads.jobs.jobs import Jobs

REPO_ROOT = pathlib.Path(__file__).resolve().parents[2]


@pytest.fixture
def kernel_env(store, monkeypatch, tmp_path):
    """What a kernel started by Jupyter for `work/remote.ipynb` sees (and this checkout importable)."""
    monkeypatch.setenv("JPY_SESSION_NAME", "work/remote.ipynb")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(REPO_ROOT), os.environ.get("PYTHONPATH")])))
    return tmp_path


def _notebook(folder: pathlib.Path, *sources: str) -> tuple[NotebookClient, nbformat.NotebookNode]:
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(s) for s in sources])
    return NotebookClient(nb, timeout=240, kernel_name="python3", resources={"metadata": {"path": str(folder)}}), nb


def _interrupt_when(client: NotebookClient, ready) -> threading.Thread:
    def interrupt():
        deadline = time.monotonic() + 200
        while not ready() and time.monotonic() < deadline:
            time.sleep(0.2)
        os.killpg(os.getpgid(client.km.provisioner.process.pid), signal.SIGINT)

    thread = threading.Thread(target=interrupt)
    thread.start()
    return thread


@pytest.mark.usefixtures("no_orphans")
def test_a_remote_call_outlives_its_killed_kernel_and_a_new_kernel_attaches_to_it(kernel_env, store, runs_of, air_home):
    # Given a notebook whose remote call runs until the test lets it end
    release, started = kernel_env / "release", kernel_env / "started"
    define = (
        "from jupyter_air import distributed\n"
        "@distributed(gpus=2, experiment='remote-nb')\n"
        "def train(scale):\n"
        "    import os, pathlib, time\n"
        "    rank = int(os.environ['RANK'])\n"
        f"    pathlib.Path({str(started)!r} + str(rank)).touch()\n"
        f"    while not pathlib.Path({str(release)!r}).exists():\n"
        "        time.sleep(0.1)\n"
        "    print('done on', rank, flush=True)\n"
        "    return rank * scale"
    )
    client, nb = _notebook(kernel_env, define, "train.distributed(10, remote=True)")
    nb.cells[1].metadata["tags"] = ["raises-exception"]

    # When the kernel runs it and the user interrupts the cell once every rank runs, then the kernel is killed
    with client.setup_kernel():
        client.execute_cell(nb.cells[0], 0)
        watcher = _interrupt_when(client, lambda: all(pathlib.Path(f"{started}{r}").exists() for r in (0, 1)))
        client.execute_cell(nb.cells[1], 1)
        watcher.join()
        kernel = client.km.provisioner.process
        kernel.kill()  # SIGKILL: nothing of the kernel says goodbye
        kernel.wait(30)
    followed = outputs_text(nb.cells[1])

    # Then the interrupt only stopped following: it says how to attach again and how to cancel
    error = next(o for o in nb.cells[1].outputs if o.output_type == "error")
    assert error.ename == "CallDetached", followed
    job_run_id = followed.split("stopped following job ", 1)[1].split(";", 1)[0]
    assert f"%air_attach {job_run_id}" in followed and f"air cancel {job_run_id}" in followed
    # And with the kernel gone, the call's run is still RUNNING, tagged with its job and its notebook
    (run,) = runs_of("remote-nb")
    assert run.info.status == "RUNNING"
    assert run.data.tags["air.job_run_id"] == job_run_id and run.data.tags["air.notebook_path"] == "work/remote.ipynb"
    # And its supervisor started warm: forked from AIR_HOME's zygote, which the kernel's first call started
    supervisor = psutil.Process(Jobs().get(job_run_id).supervisor_pid)
    zygotes = [held[0] for lock in air_home.glob("forks-*.pid") if (held := zygote_client.holder(lock))]
    assert supervisor.ppid() in zygotes and supervisor.name() == "air-supervisor", (supervisor.ppid(), zygotes)

    # When a new kernel attaches to it (with the magic) and the ranks are let end
    client, nb = _notebook(kernel_env, "%load_ext jupyter_air", f"%air_attach {job_run_id}")
    with client.setup_kernel():
        client.execute_cell(nb.cells[0], 0)
        release.touch()
        client.execute_cell(nb.cells[1], 1)
    attached = outputs_text(nb.cells[1])

    # Then it shows the card with every rank's lines and returns the results by rank
    assert "[rank 0] done on 0" in attached and "[rank 1] done on 1" in attached
    assert nb.cells[1].outputs[-1]["data"]["text/plain"] == "[0, 10]"
    (run,) = runs_of("remote-nb")
    assert run.info.status == "FINISHED"
    # And its card names the job with the line that follows it again, and counts the run's own time, from its
    # start before the first kernel's interrupt to its end
    assert f"job {job_run_id} · follow it again from any kernel: %air_attach {job_run_id}" in attached
    assert f"finished</span> · {duration((run.info.end_time - run.info.start_time) / 1000)} ·" in attached


@pytest.mark.usefixtures("no_orphans")
def test_a_remote_call_that_fails_raises_its_distributed_error_when_attached(store, runs_of):
    from jupyter_air import attach, distributed
    from jupyter_air.training.errors import DistributedError

    # Given a function that raises on rank 1
    @distributed(gpus=2, experiment="remote-fails")
    def train():
        import os

        if os.environ["RANK"] == "1":
            raise ValueError("bad shard on rank 1")
        return "ok"

    # When it runs remotely, and is attached again once it ended
    with pytest.raises(DistributedError) as followed:
        train.distributed(remote=True)
    (run,) = runs_of("remote-fails")
    with pytest.raises(DistributedError) as attached:
        attach(run.data.tags["air.job_run_id"])

    # Then both raise the error a local call raises: the rank, the exception and its traceback
    for raised in (followed.value, attached.value):
        assert (raised.rank, raised.exception_type) == (1, "ValueError")
        assert "bad shard on rank 1" in raised.exception_message and "raise ValueError" in raised.worker_traceback
    assert run.info.status == "FAILED"


@pytest.mark.usefixtures("no_orphans")
def test_stop_on_a_remote_calls_card_cancels_its_job_leaving_no_process(store, runs_of, tmp_path):
    from jupyter_air.training import remote
    from jupyter_air.training.options import RunOptions
    from jupyter_air.workloads.jobs.attempt_runs import cancel_remote_call
    from jupyter_air.workloads.jobs.jobs import Jobs

    # Given a remote call whose ranks run
    started = tmp_path / "started"

    def hang():
        import os
        import pathlib
        import time

        pathlib.Path(f"{started}{os.environ['RANK']}").touch()
        time.sleep(600)

    tags = {"air.source": "distributed", "air.function": "hang"}
    job_run_id = remote.submit(hang, (), {}, RunOptions(gpus=2, experiment="remote-stop"), tags, {})
    deadline = time.monotonic() + 200
    while not all(pathlib.Path(f"{started}{r}").exists() for r in (0, 1)) and time.monotonic() < deadline:
        time.sleep(0.2)
    (run,) = runs_of("remote-stop")

    # When the card's Stop asks for its run to stop
    assert cancel_remote_call(run.info.run_id)

    # Then the job is CANCELED, its run KILLED, and none of its processes is left (no_orphans checks)
    assert Jobs().get(job_run_id).status == "CANCELED"
    (run,) = runs_of("remote-stop")
    assert run.info.status == "KILLED"
    # And another run (not a remote call's) is not stopped this way
    assert not cancel_remote_call(run.info.run_id)
