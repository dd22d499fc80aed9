"""A remote call on a real Ray cluster on loopback: its driver, a supervisor forked on this machine from AIR_HOME's
zygote (no Ray Job), outlives the process that submitted it, and ``attach`` from another process returns its results
by rank; its node actors are parked for the next remote call of the same shape, listed as held, and freed on
Release, or by a call of this user that must wait for their nodes."""

from __future__ import annotations

import contextlib
import io
import os
import pathlib
import subprocess
import sys
import textwrap
import time

import psutil
import pytest
from ray_cluster import actor_processes, agent_processes, job_processes

pytestmark = [pytest.mark.ray, pytest.mark.usefixtures("ray_driver"), pytest.mark.timeout(900)]

REPO_ROOT = pathlib.Path(__file__).resolve().parents[2]

#: A notebook's remote call, as a script: 2 ranks on each of 2 nodes, which wait for the test to let them end.
SUBMITTER = textwrap.dedent(
    """\
    import sys
    import time

    from jupyter_air import distributed
    from jupyter_air.training import zygote_client

    started, release, address = sys.argv[1:]
    zygote_client.warm()  # as the Jupyter server does when it starts: the call's supervisor is forked from it
    while zygote_client.holder(zygote_client.lock_path(zygote_client.key())) is None:
        time.sleep(0.1)


    @distributed(gpus=2, nodes=2, ray_address=address, experiment="remote-ray")
    def train(scale):
        import os, pathlib, time

        rank = int(os.environ["RANK"])
        pathlib.Path(started + str(rank)).touch()
        while not pathlib.Path(release).exists():
            time.sleep(0.1)
        print(f"done on node {os.environ['GROUP_RANK']}", flush=True)
        return rank * scale


    train.distributed(10, remote=True)
    """
)


def _until(predicate, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while not (found := predicate()):
        assert time.monotonic() < deadline, f"no {what} after {timeout:.0f} s"
        time.sleep(0.2)
    return found


def _job_processes(job_run_id: str) -> list[psutil.Process]:
    """Live processes of the job on any node, plus any node actor's processes (ranks, fork servers, guards)."""
    return job_processes(job_run_id) + agent_processes()


def test_a_remote_call_outlives_its_submitter_and_attach_returns_its_results(
    ray_cluster, store, runs_of, tmp_path, air_home
):
    from ray.job_submission import JobSubmissionClient

    from jupyter_air import attach, distributed, procs
    from jupyter_air.cluster.held import holders, request_release
    from jupyter_air.training import zygote_client
    from jupyter_air.workloads.jobs.jobs import Jobs

    # Given a process that makes a remote call on 2 nodes of the cluster, whose 4 ranks run until released
    started, release = tmp_path / "started", tmp_path / "release"
    (tmp_path / "submit.py").write_text(SUBMITTER)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO_ROOT), os.environ.get("PYTHONPATH")]))}
    submitter = subprocess.Popen(
        [sys.executable, "submit.py", str(started), str(release), ray_cluster.address],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        (job,) = _until(lambda: Jobs().list(active_only=False, experiment_name="remote-ray"), 300, "job")
        _until(lambda: all(pathlib.Path(f"{started}{r}").exists() for r in range(4)), 420, "4 running ranks")
        _until(lambda: Jobs().get(job.job_run_id).status == "RUNNING", 60, "RUNNING job")
        job = Jobs().get(job.job_run_id)
        supervisor = psutil.Process(job.supervisor_pid)
        forked_by = supervisor.ppid()  # read while it runs: it may have ended by the time attach returns
        zygotes = [held[0] for lock in air_home.glob("forks-*.pid") if (held := zygote_client.holder(lock))]

        # When the submitter goes away while the job runs
        submitter.kill()
        submitter.wait(30)
    finally:
        if submitter.poll() is None:
            submitter.kill()
            submitter.wait(30)
    running = Jobs().get(job.job_run_id).status
    # And another process attaches to it, and its ranks are let end
    release.touch()
    shown = io.StringIO()
    with contextlib.redirect_stdout(shown):
        results = attach(job.job_run_id)

    # Then the call's supervisor ran on this machine, forked from AIR_HOME's zygote (no Ray Job), and kept running
    # without its submitter
    assert job.executor == "ray" and job.num_nodes == 2
    assert forked_by in zygotes, (forked_by, zygotes)
    # (which imported Ray for it first: Ray's core library is mapped in the zygote)
    zygote = psutil.Process(forked_by)
    assert any("_raylet" in region.path for region in zygote.memory_maps()), zygote.pid
    assert running == "RUNNING", submitter.stderr.read().decode()
    submitted = [info.submission_id for info in JobSubmissionClient(ray_cluster.dashboard_url).list_jobs()]
    assert job.job_run_id not in submitted
    # And attach returned every rank's result by global rank, and showed the ranks' lines of both nodes
    assert results == [0, 10, 20, 30]
    assert "rank 0: finished: done on node 0" in shown.getvalue(), shown.getvalue()
    assert "rank 3: finished: done on node 1" in shown.getvalue(), shown.getvalue()
    # And the job, Ray's job and the call's run all ended well; the run is tagged with the job
    ended = Jobs().get(job.job_run_id)
    assert ended.status == "SUCCEEDED", ended.error
    (run,) = runs_of("remote-ray")
    assert run.info.status == "FINISHED" and run.data.tags["air.job_run_id"] == job.job_run_id
    assert (run.data.tags["air.nodes"], run.data.tags["air.world_size"]) == ("2", "4")
    # And no process of the call is left on any node but its 2 node actors (and their fork servers), parked for the
    # next remote call and listed as held by their keeper
    _until(lambda: not procs.is_alive(supervisor.pid, job.supervisor_started), 30, "end of the supervisor")
    (keeper,) = _until(holders, 30, "keeper of the parked nodes")
    assert len(keeper["names"]) == 2 and len(keeper["nodes"]) == 2, keeper
    parked = {proc.pid for proc in actor_processes("TrainingAgent")}
    assert len(parked) == 2
    assert [p for p in _job_processes(job.job_run_id) if p not in agent_processes()] == []

    # When this process makes a remote call of the same shape
    call = distributed(scaled, gpus=2, nodes=2, ray_address=ray_cluster.address, experiment="remote-ray-again")
    with contextlib.redirect_stdout(io.StringIO()):
        again = call.distributed(3, remote=True)

    # Then it ran its ranks on the parked actors, and parked them again under a new keeper (the last one ended)
    assert again == [0, 3, 6, 9]
    assert {proc.pid for proc in actor_processes("TrainingAgent")} == parked
    (second,) = _until(lambda: [r for r in holders() if r["pid"] != keeper["pid"]], 30, "the next keeper")
    _until(lambda: not procs.is_alive(keeper["pid"], keeper["started"]), 30, "end of the first keeper")

    # When the GPU panel's Release asks for them
    assert request_release(second["pid"])

    # Then the actors, their fork servers and guards, and the keeper are gone: no process of either call is left
    _until(lambda: not holders() and not actor_processes("TrainingAgent"), 60, "end of the parked actors")
    with contextlib.suppress(AssertionError):
        _until(lambda: not _job_processes(job.job_run_id), 60, "end of the job's processes")
    assert _job_processes(job.job_run_id) == []
    _until(lambda: not procs.is_alive(second["pid"], second["started"]), 30, "end of the second keeper")


def scaled(scale):
    import os

    return int(os.environ["RANK"]) * scale


def test_a_call_that_must_wait_for_nodes_frees_those_this_users_remote_calls_parked(ray_cluster, air_home):
    from jupyter_air import distributed, procs
    from jupyter_air.cluster.held import holders
    from jupyter_air.training import release_nodes

    # Given a remote call on 2 nodes that parked its actors, holding every GPU of the cluster's 2 GPU nodes
    call = distributed(scaled, gpus=2, nodes=2, ray_address=ray_cluster.address, experiment="remote-ray-parked")
    with contextlib.redirect_stdout(io.StringIO()):
        assert call.distributed(2, remote=True) == [0, 2, 4, 6]
    (keeper,) = _until(lambda: [r for r in holders() if r.get("names")], 30, "keeper of the parked nodes")
    parked = {proc.pid for proc in actor_processes("TrainingAgent")}
    assert len(parked) == 2

    # When this process calls the same function on those nodes itself (its own actors, which need the same GPUs)
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            results = call.distributed(5)

        # Then the call ran at once on new actors, the parked ones freed and their keeper ended
        assert results == [0, 5, 10, 15]
        _until(lambda: not procs.is_alive(keeper["pid"], keeper["started"]), 30, "end of the keeper")
        assert [r for r in holders() if r.get("names")] == []
        assert not parked & {proc.pid for proc in actor_processes("TrainingAgent")}
    finally:
        release_nodes()
    _until(lambda: not actor_processes("TrainingAgent") and not agent_processes(), 60, "end of every node actor")


def test_a_failed_remote_call_parks_its_actors_and_a_canceled_one_leaves_nothing_on_any_node(
    ray_cluster, runs_of, tmp_path
):
    from jupyter_air import distributed
    from jupyter_air.cluster.held import holders
    from jupyter_air.training import remote
    from jupyter_air.training.errors import DistributedError
    from jupyter_air.training.options import RunOptions
    from jupyter_air.workloads.jobs.jobs import Jobs

    # Given a remote call on 2 nodes whose rank 3 (node 1) raises
    def shard():
        import os

        if os.environ["RANK"] == "3":
            raise ValueError("bad shard on rank 3")

    call = distributed(shard, gpus=2, nodes=2, ray_address=ray_cluster.address, experiment="remote-ray-fails")
    with pytest.raises(DistributedError) as failed, contextlib.redirect_stdout(io.StringIO()):
        call.distributed(remote=True)

    # Then the cell raised the rank's error, naming its node; the call's actors are parked all the same
    assert (failed.value.node, failed.value.rank, failed.value.exception_type) == (1, 3, "ValueError")
    _until(lambda: [r for r in holders() if r.get("names")], 30, "keeper of the parked nodes")
    parked = {proc.pid for proc in actor_processes("TrainingAgent")}

    # When the next remote call of that shape runs on them, and is canceled while its ranks run
    started = tmp_path / "started"

    def hang():
        import os
        import pathlib
        import time

        pathlib.Path(f"{started}{os.environ['RANK']}").touch()
        time.sleep(600)

    options = RunOptions(gpus=2, nodes=2, ray_address=ray_cluster.address, experiment="remote-ray-cancel")
    tags = {"air.source": "distributed", "air.function": "hang"}
    job_run_id = remote.submit(hang, (), {}, options, tags, {})
    _until(lambda: all(pathlib.Path(f"{started}{r}").exists() for r in range(4)), 300, "4 running ranks")
    running = {proc.pid for proc in actor_processes("TrainingAgent")}
    canceled = Jobs().cancel(job_run_id)

    # Then it ran on the parked actors; the job is CANCELED, its run KILLED, and nothing is parked or left on any
    # node: no actor, fork server, rank or guard, no keeper, no supervisor
    assert running == parked
    assert canceled.status == "CANCELED"
    (run,) = runs_of("remote-ray-cancel")
    assert run.info.status == "KILLED"
    _until(lambda: not _job_processes(job_run_id), 60, "end of the job's processes")
    assert [r for r in holders() if r.get("names")] == []
