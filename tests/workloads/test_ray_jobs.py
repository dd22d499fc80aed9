"""Jobs on a real Ray cluster on loopback run their supervisor as a Ray Job: they outlive whoever submitted them,
stop every node themselves when canceled, list every node in the jobs API, and record what each node really did."""

from __future__ import annotations

import contextlib
import json
import secrets
import signal
import statistics
import subprocess
import sys
import textwrap
import time
import urllib.request

import pytest
from ray_cluster import free_port
from tornado.httpclient import HTTPClientError
from workload_helpers import nothing_left, ray_job_info, write_workload

# A Ray Job starts a job supervisor actor, then the supervisor, then its nodes: minutes on a loaded machine.
pytestmark = [pytest.mark.ray, pytest.mark.usefixtures("ray_driver"), pytest.mark.timeout(900)]

#: Keeps every CPU of the machine busy for a few seconds: a load whose CPU utilization is known (near 100 %).
BURN = textwrap.dedent(
    """\
    import multiprocessing, os, time

    def burn(seconds):
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            pass

    if __name__ == "__main__":
        workers = [multiprocessing.Process(target=burn, args=(6,)) for _ in range(os.cpu_count())]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
        print("burned", os.environ["NODE_RANK"], flush=True)
    """
)


@contextlib.contextmanager
def jupyter_server(air, root, ray_address: str):
    """A real Jupyter server process with jupyter_air, on this AIR_HOME and cluster: ``(process, url, token)``."""
    port, token = free_port(), secrets.token_hex(8)
    command = [
        sys.executable,
        "-m",
        "jupyter_server",
        f"--port={port}",
        "--ip=127.0.0.1",
        "--no-browser",
        "--ServerApp.port_retries=0",
        f"--IdentityProvider.token={token}",
        "--ServerApp.allow_root=True",
        f"--ServerApp.root_dir={root}",
        "--JupyterAir.mlflow_ui_autostart=False",
        "--JupyterAir.fork_zygote_at_start=False",
        f"--JupyterAir.ray_address={ray_address}",
    ]
    log = open(root / "server.log", "wb")  # noqa: SIM115 - closed below, after the server
    server = subprocess.Popen(command, env=air.env, cwd=root, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/"
    try:
        deadline = time.monotonic() + 180
        while True:
            try:
                request(url, token, "jupyter-air/version")
                break
            except OSError:
                if time.monotonic() > deadline or server.poll() is not None:
                    raise AssertionError((root / "server.log").read_text()) from None
                time.sleep(0.5)
        yield server, url, token
    finally:
        if server.poll() is None:
            server.kill()
        server.wait(30)
        log.close()


def request(url: str, token: str, path: str, body: dict | None = None) -> tuple[int, dict]:
    data = None if body is None else json.dumps(body).encode()
    headers = {"Authorization": f"token {token}", "Content-Type": "application/json"}
    with urllib.request.urlopen(urllib.request.Request(url + path, data=data, headers=headers), timeout=120) as r:
        return r.status, json.loads(r.read())


def test_a_two_node_job_outlives_its_submitter_and_the_jupyter_server(ray_cluster, air, tmp_path, mlflow_client):
    # Given a 2-node workload under the root of a real Jupyter server that uses the cluster
    command = 'echo "started $NODE_RANK"; sleep 5; echo "finished $NODE_RANK"'
    write_workload(tmp_path, command=command, compute={"num_accelerators": 0, "num_nodes": 2})
    with jupyter_server(air, tmp_path, ray_cluster.address) as (server, url, token):
        # When JupyterLab submits it, and the server is killed at once
        code, from_server = request(url, token, "jupyter-air/jobs", {"path": "workload.yaml"})
        server.kill()
    # And the same workload is submitted with `air run --watch`, which is killed as soon as it said the job's id
    watching = air.popen("run", "-f", str(tmp_path / "workload.yaml"), "--ray-address", ray_cluster.address, "--watch")
    from_air = watching.stdout.readline().strip()
    watching.send_signal(signal.SIGKILL)
    watching.wait(30)

    # Then both were Ray Jobs whose submission id is the job run id, with the job in their metadata
    assert code == 201 and from_server["executor"] == "ray-job" and from_server["num_nodes"] == 2
    submitted = (from_server["job_run_id"], from_air)
    for job_run_id in submitted:
        info = ray_job_info(ray_cluster, job_run_id)
        assert info.submission_id == job_run_id
        assert info.metadata["air.job_run_id"] == job_run_id and info.metadata["air.experiment_name"] == "air-tests"
    # And each ran to its end on both nodes, its attempt's run FINISHED, Ray's final status mirrored
    for job_run_id in submitted:
        job = air.wait(job_run_id, lambda j: j["ray_job"]["status"] not in ("PENDING", "RUNNING"), timeout=420)
        assert job["status"] == "SUCCEEDED" and job["ray_job"]["status"] == "SUCCEEDED", job
        assert "finished 1" in air("logs", job_run_id, "--node", "1", check=True).stdout
        (attempt,) = job["attempts"]
        assert [n["exit_code"] for n in attempt["nodes"]] == [0, 0]
        assert mlflow_client.get_run(attempt["mlflow_run_id"]).info.status == "FINISHED"
        # on the node actors its submitter started while Ray started the supervisor, though the submitter was gone
        supervisor_log = (tmp_path / "air" / "jobs" / job_run_id / "supervisor.log").read_text()
        assert "took the 2 node actor(s) started ahead of this driver" in supervisor_log
    assert [nothing_left(job_run_id) for job_run_id in submitted] == [[], []]


def test_cancel_stops_every_node_from_the_supervisor_and_leaves_no_process(ray_cluster, air, tmp_path, mlflow_client):
    # Given a long workload running on 2 nodes as a Ray Job
    path = write_workload(
        tmp_path, command='echo "started $NODE_RANK"; sleep 600', compute={"num_accelerators": 0, "num_nodes": 2}
    )
    job_run_id = air.submit(path, "--ray-address", ray_cluster.address)
    air.wait(job_run_id, until=lambda job: "started" in air("logs", job_run_id, "--node", "1").stdout, timeout=420)

    # When it is canceled
    (canceled,) = air.json("cancel", job_run_id)

    # Then its supervisor stopped every node itself (no take-over by `air`), recording each node's exit status
    assert canceled["status"] == "CANCELED" and canceled["error"] == "attempt 0 canceled", canceled
    job = air.wait(job_run_id, lambda j: j["ray_job"]["status"] != "RUNNING")
    (attempt,) = job["attempts"]
    assert attempt["status"] == "KILLED" and attempt["exit_code"] == -signal.SIGTERM
    assert [n["exit_code"] for n in attempt["nodes"]] == [-signal.SIGTERM, -signal.SIGTERM]
    assert mlflow_client.get_run(attempt["mlflow_run_id"]).info.status == "KILLED"
    # And Ray says the job was stopped, and no process of it is left on any node (the supervisor included)
    assert job["ray_job"]["status"] == "STOPPED" and ray_job_info(ray_cluster, job_run_id).status == "STOPPED"
    assert nothing_left(job_run_id) == []


def test_each_node_records_the_load_it_really_had_and_the_drivers_gpus(ray_cluster, air, tmp_path, mlflow_client):
    # Given a workload that keeps every CPU busy on each of 2 nodes, sampled every second, submitted from a terminal
    # whose GPU source simulates 3 GPUs (the nodes' own environment simulates 2)
    (tmp_path / "burn.py").write_text(BURN)
    path = write_workload(
        tmp_path, command=f"{sys.executable} burn.py", compute={"num_accelerators": 0, "num_nodes": 2}
    )
    air.env.update(
        AIR_SYSTEM_METRICS_INTERVAL_SECONDS="1", JUPYTER_AIR_GPU_SOURCE="simulated", JUPYTER_AIR_SIMULATED_GPUS="3"
    )

    # When it runs
    job = air.wait(air.submit(path, "--ray-address", ray_cluster.address), timeout=420)

    # Then every CPU sample of every node shows the load (none is 0), most near 100 %
    assert job["status"] == "SUCCEEDED", job
    run_id = job["attempts"][0]["mlflow_run_id"]
    for node in (0, 1):
        samples = [
            m.value for m in mlflow_client.get_metric_history(run_id, f"system/node_{node}/cpu_utilization_percentage")
        ]
        assert len(samples) >= 2 and all(value > 0 for value in samples), (node, samples)
        assert statistics.median(samples) >= 75, (node, samples)
    # And each node sampled the GPUs of the submitter's source (3 simulated), not its own
    metrics = mlflow_client.get_run(run_id).data.metrics
    assert {"system/node_0/gpu_2_utilization_percentage", "system/node_1/gpu_2_utilization_percentage"} <= set(metrics)


async def test_the_jobs_api_lists_every_node_of_a_two_node_job(ray_cluster, air, jp_fetch, jp_root_dir, monkeypatch):
    # Given a server that uses the cluster, and a 2-node workload under its root
    monkeypatch.setenv("AIR_RAY_ADDRESS", ray_cluster.address)
    write_workload(
        jp_root_dir, command='echo "node $NODE_RANK of $NUM_NODES"', compute={"num_accelerators": 0, "num_nodes": 2}
    )

    # When JupyterLab submits it and it runs
    posted = json.loads((await jp_fetch("jupyter-air", "jobs", method="POST", body=b'{"path": "workload.yaml"}')).body)
    air.wait(posted["job_run_id"], timeout=420)
    job = json.loads((await jp_fetch("jupyter-air", "jobs", posted["job_run_id"])).body)

    # Then the API says it ran on 2 nodes and where each ran, and each node's log opens
    assert posted["num_nodes"] == job["num_nodes"] == 2 and job["status"] == "SUCCEEDED"
    (attempt,) = job["attempts"]
    assert [(n["node"], n["ip"], n["exit_code"]) for n in attempt["nodes"]] == [
        (0, "127.0.0.1", 0),
        (1, "127.0.0.1", 0),
    ]
    assert all(n["hostname"] and n["ray_node_id"] for n in attempt["nodes"])
    for node in (0, 1):
        logs = json.loads(
            (await jp_fetch("jupyter-air", "jobs", job["job_run_id"], "logs", params={"node": str(node)})).body
        )
        assert logs["text"] == f"node {node} of 2\n" and logs["complete"]
    listed = json.loads((await jp_fetch("jupyter-air", "jobs")).body)["jobs"]
    assert next(j for j in listed if j["job_run_id"] == job["job_run_id"])["num_nodes"] == 2
    # And a node it does not have is refused with the count
    with pytest.raises(HTTPClientError) as refused:
        await jp_fetch("jupyter-air", "jobs", job["job_run_id"], "logs", params={"node": "2"})
    assert refused.value.code == 404 and "has 2 node(s) (0 to 1)" in json.loads(refused.value.response.body)["message"]
