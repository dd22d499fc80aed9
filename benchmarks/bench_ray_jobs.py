"""Jobs as Ray Jobs on a local cluster: submit -> RUNNING through air's one job path vs a bare ``submit_job``, a
remote no-op call (``.distributed(remote=True)``, its supervisor forked here) vs the same call driven by this process,
and cancel of a 2-node job.

Everything runs on this machine's loopback (a head with the job server and 2 worker nodes), side by side: each
round submits the same no-op workload once each way, so load from elsewhere hits both alike. The bare submission
gets the very entrypoint air's path builds (the supervisor of a job recorded in another AIR_HOME), so the ratio is
what air's path (validation, the job store, pinning the driver to this node) adds to Ray's own.
"""

from __future__ import annotations

import contextlib
import io
import logging
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from ray_cluster import LocalCluster, free_parked  # sets the environment Ray reads before Ray is imported

from benchmarks.baseline import stop_resident_servers

ROUNDS = 5
CANCELS = 3
COMPUTE = "compute: {num_accelerators: 0, num_nodes: 2}\n"
NOOP = "experiment_name: bench-ray-jobs\ncommand: 'true'\n" + COMPUTE
SLEEP = "experiment_name: bench-ray-jobs\ncommand: 'echo started; sleep 600'\n" + COMPUTE


def _until(predicate, timeout: float = 600.0, step: float = 0.02) -> float:
    """Seconds until ``predicate()`` is true."""
    started = time.perf_counter()
    while not predicate():
        if time.perf_counter() - started > timeout:
            raise TimeoutError("the job did not get there in time")
        time.sleep(step)
    return time.perf_counter() - started


def _ray_says(client, submission_id: str, *statuses: str):
    return lambda: client.get_job_status(submission_id).value in statuses


def _air_says(jobs, job_run_id: str, *statuses: str):
    return lambda: jobs.get(job_run_id).status in statuses


def _air_started(jobs, job_run_id: str):
    """True once the job was RUNNING in air (its first attempt's command started), even if it has ended since."""
    return lambda: jobs.get(job_run_id).started_ms is not None


def _printed(log: Path, text: bytes):
    return lambda: log.exists() and text in log.read_bytes()


def _row(name: str, values: list[float], baseline: float | None) -> str:
    median = statistics.median(values)
    ratio = f"  {median / baseline:.2f}x" if baseline else ""
    spread = f"(min {min(values) * 1000:.0f}, max {max(values) * 1000:.0f})"
    return f"  {name:<66} median {median * 1000:8.0f} ms {spread}{ratio}"


def submit_to_running(cluster: LocalCluster, folder: Path) -> None:
    from ray.job_submission import JobSubmissionClient

    from jupyter_air.workloads.jobs.jobs import Jobs
    from jupyter_air.workloads.supervisor.executor import supervisor_argv
    from jupyter_air.workloads.supervisor.ray_jobs import entrypoint, pinned_here

    workload = folder / "noop.yaml"
    workload.write_text(NOOP)
    jobs, spare = Jobs(folder / "home"), Jobs(folder / "spare-home")
    client = JobSubmissionClient(cluster.dashboard_url)
    jobs.resolve_file(workload, ray_address=cluster.address)  # joins the cluster once, as a long-lived server has
    ours, bare, running = [], [], []
    for _ in range(ROUNDS):
        started = time.perf_counter()
        job_run_id = jobs.submit_file(workload, ray_address=cluster.address).job_run_id
        ours.append(time.perf_counter() - started + _until(_ray_says(client, job_run_id, "RUNNING")))
        running.append(time.perf_counter() - started + _until(_air_started(jobs, job_run_id)))
        _until(_air_says(jobs, job_run_id, "SUCCEEDED", "FAILED"))

        job = jobs.get(job_run_id)
        record = spare.store.create_job(job.workload, job.source, job.user, "ray-job")
        line = entrypoint(spare.store.job_dir(record.job_run_id), supervisor_argv(record.job_run_id, str(spare.home)))
        started = time.perf_counter()
        client.submit_job(entrypoint=line, submission_id=record.job_run_id, **pinned_here())
        bare.append(time.perf_counter() - started + _until(_ray_says(client, record.job_run_id, "RUNNING")))
        _until(_ray_says(client, record.job_run_id, "SUCCEEDED", "FAILED", "STOPPED"))
    baseline = statistics.median(bare)
    print(f"submit -> RUNNING (Ray's status) of a no-op 2-node workload, {ROUNDS} rounds:")
    print(_row("bare JobSubmissionClient.submit_job, the same entrypoint", bare, baseline))
    print(_row("jupyter_air Jobs.submit_file (validate, record, submit)", ours, baseline))
    print(_row("  ... until the job is RUNNING in air (command started on 2 nodes)", running, baseline))


def noop() -> None:
    """The function both calls run: nothing, so only the way there and back is measured."""


def remote_vs_local(cluster: LocalCluster) -> None:
    import cloudpickle

    from jupyter_air import distributed

    cloudpickle.register_pickle_by_value(sys.modules[__name__])  # the nodes cannot import this module
    _warm_zygote()
    # gpus=None: one rank per node of a cluster without GPUs, here and in the remote call's supervisor
    call = distributed(noop, nodes=2, ray_address=cluster.address, experiment="bench-ray-jobs")
    timed: dict[bool, list[float]] = {False: [], True: []}
    for round_ in range(ROUNDS + 1):
        for remote in (False, True):
            started = time.perf_counter()
            with contextlib.redirect_stdout(io.StringIO()):  # the run card, as text
                results = call.distributed(remote=remote)
            assert results == [None, None], results
            if round_:  # round 0 warms up: this process joins the cluster, both calls' actors start
                timed[remote].append(time.perf_counter() - started)
    local = statistics.median(timed[False])
    print(f"a no-op call on 2 nodes x 1 rank, call -> results, {ROUNDS} rounds (baseline: this process drives it):")
    print(_row(".distributed(): this process drives the nodes (their actors kept)", timed[False], local))
    print(_row(".distributed(remote=True): a supervisor here drives them, parked actors", timed[True], local))


def _warm_zygote() -> None:
    """AIR_HOME's zygote up, as a Jupyter server starts it: a remote call's supervisor is forked from it."""
    from jupyter_air.training import zygote_client

    zygote_client.warm()
    _until(lambda: zygote_client.holder(zygote_client.lock_path(zygote_client.key())) is not None, step=0.1)


def cancel_two_nodes(cluster: LocalCluster, folder: Path) -> None:
    from jupyter_air.workloads.jobs.jobs import Jobs

    workload = folder / "sleep.yaml"
    workload.write_text(SLEEP)
    jobs = Jobs(folder / "home")
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    in_process, command = [], []
    for round_ in range(2 * CANCELS):
        job = jobs.submit_file(workload, ray_address=cluster.address)
        _until(_printed(jobs.log_dir(job, 0, 1) / "output.log", b"started"))
        started = time.perf_counter()
        if round_ % 2:
            subprocess.run([sys.executable, "-m", "jupyter_air.cli", "cancel", job.job_run_id], env=env, check=True)
        else:
            jobs.cancel(job.job_run_id)
        (command if round_ % 2 else in_process).append(time.perf_counter() - started)
        ended = jobs.get(job.job_run_id)
        codes = [n["exit_code"] for n in ended.attempts[-1].node_list]
        print(f"  canceled {job.job_run_id}: {ended.status}, {ended.error!r}, node exit codes {codes}")
    print(f"cancel of a 2-node job (SIGTERM to the command on each node), {CANCELS} each (goal <= 2 s):")
    print(_row("Jobs.cancel, in a process that already has the job path", in_process, None))
    print(_row("air cancel JOB (a new process: Python, imports, the store)", command, None))


def main() -> None:
    logging.getLogger("ray").setLevel(logging.ERROR)
    with tempfile.TemporaryDirectory(prefix="air-bench-") as tmp:
        folder = Path(tmp)
        os.environ["AIR_HOME"] = str(folder / "home")
        os.environ.pop("MLFLOW_TRACKING_URI", None)  # AIR_HOME's own store, through its MLflow server
        cluster = LocalCluster(dashboard=True)
        try:
            for _ in range(2):
                cluster.add_node(gpus=0, cpus=2)
            cluster.wait_for_nodes()
            _warm_zygote()  # as the Jupyter server of the user who submits starts it
            submit_to_running(cluster, folder)
            remote_vs_local(cluster)
            cancel_two_nodes(cluster, folder)
        finally:
            free_parked(cluster.address)  # and their keepers
            cluster.shutdown()
            stop_resident_servers(folder)


if __name__ == "__main__":
    main()
