"""Job permissions on a team: the cost of answering the Experiment panel's job poll as bob, who has CAN_VIEW on half
of alice's 50 jobs, against the same poll in single-user mode (goal: at most 1.5x). Measured twice: the model alone
(``JobsView.list`` with and without a caller) and over HTTP (the air-jobs service of a real JupyterHub as bob,
through the hub's proxy and at its own address, and bob's own Jupyter server answering the panel's route from it,
against the single-user Jupyter server's own route, as its owner)."""

from __future__ import annotations

import asyncio
import os
import statistics
import tempfile
import time
from pathlib import Path

from benchmarks.bench_experiment import NO_UI, start_server

JOBS, GRANTED = 50, 25
#: Polls timed per side (after 5 to warm caches and connections).
ROUNDS = 200


class _Team:
    """Whom grants may name here."""

    def has_user(self, name: str) -> bool:
        return name in ("alice", "bob")

    def has_group(self, name: str) -> bool:
        return False

    def unknown(self, kind: str, name: str) -> str:
        return f"no {kind} {name!r}"


def fill(home: Path) -> None:
    """alice's ended jobs, bob granted CAN_VIEW on every other one."""
    from jupyter_air.workloads.jobs.jobs import Jobs
    from jupyter_air.workloads.state.permissions import Permissions, job_target

    store = Jobs(home).store
    workload = {"experiment_name": "team-bench", "command": "true", "compute": {"num_accelerators": 0}}
    for i in range(JOBS):
        job = store.create_job({**workload, "max_retries": 0}, "w.yaml", "alice", "local")
        store.finish(job.job_run_id, "SUCCEEDED")
        if i % 2 == 0:
            Permissions(store, _Team()).grant(job_target(store.get(job.job_run_id)), "bob", None, "CAN_VIEW")


def model_ms(home: Path) -> tuple[float, float]:
    """Median milliseconds of ``JobsView.list()`` for the owner (no caller) and for bob."""
    from jupyter_air.workloads.state.permissions import Caller
    from jupyter_air.workloads.surfaces.jobs_view import JobsView

    def median_ms(view: JobsView, expected: int) -> float:
        times = []
        for _ in range(ROUNDS):
            started = time.perf_counter()
            listed = view.list()["jobs"]
            times.append((time.perf_counter() - started) * 1000)
            assert len(listed) == expected, len(listed)
        return statistics.median(times)

    return median_ms(JobsView(home), JOBS), median_ms(JobsView(home, caller=Caller("bob"), directory=_Team()), GRANTED)


def http_ms(targets: list[tuple[str, str, int]]) -> list[float]:
    """Median milliseconds of ``GET url`` with ``token`` for each ``(url, token, expected)``, the requests taken in
    turns (one to each, round after round: the machine's drift is shared), each checked to list ``expected`` jobs."""
    import json

    from tornado.httpclient import AsyncHTTPClient

    async def run() -> list[list[float]]:
        client, times = AsyncHTTPClient(), [[] for _ in targets]
        for i in range(ROUNDS + 5):
            for (url, token, expected), kept in zip(targets, times, strict=True):
                started = time.perf_counter()
                answer = await client.fetch(url, headers={"Authorization": f"token {token}"})
                if i >= 5:
                    kept.append((time.perf_counter() - started) * 1000)
                assert len(json.loads(answer.body)["jobs"]) == expected
        return times

    return [statistics.median(kept) for kept in asyncio.run(run())]


def main() -> None:
    from benchmarks.bench_gpu import TOKEN
    from jupyter_air.team.stack import Hub

    with tempfile.TemporaryDirectory(prefix="air-bench-team-") as tmp:
        folder = Path(tmp)
        home, root = folder / "air", folder / "root"
        root.mkdir()
        fill(home)
        owner_model, bob_model = model_ms(home)
        servers = [start_server(home, root, NO_UI)]
        hub = Hub(folder, {"AIR_HOME": str(home)})
        try:
            tokens = hub.ready().tokens()
            proxied = f"{hub.url}/services/air-jobs/"  # through the hub's proxy, as a browser or a script reach it
            os.environ["JUPYTERHUB_API_TOKEN"] = tokens["bob"]  # bob's server's token, as the hub's spawner sets it
            try:  # bob's server reaching the service through the proxy, and at its own address (as `make hub` has it)
                for name, url in (("bob-proxied", proxied), ("bob", hub.service_url)):
                    servers.append(start_server(folder / name, root, (*NO_UI, f"--JupyterAir.jobs_service_url={url}")))
            finally:
                del os.environ["JUPYTERHUB_API_TOKEN"]
            (_, base), (_, via_proxy), (_, at_service) = servers
            bob = tokens["bob"]
            single, team, direct, forwarded_proxied, forwarded = http_ms(
                [
                    (base + "jobs", TOKEN, JOBS),
                    (proxied + "jobs", bob, GRANTED),
                    (hub.service_url + "jobs", bob, GRANTED),
                    (via_proxy + "jobs", TOKEN, GRANTED),
                    (at_service + "jobs", TOKEN, GRANTED),
                ]
            )
        finally:
            hub.stop()
            for server, _ in servers:
                server.terminate()
                server.wait(30)
    print(f"{JOBS} jobs, bob granted CAN_VIEW on {GRANTED}; medians of {ROUNDS} polls")
    ratio = bob_model / owner_model
    print(f"model  JobsView.list(): owner {owner_model:.2f} ms, bob {bob_model:.2f} ms ({ratio:.2f}x)")
    print(
        f"HTTP   GET jobs: single-user Jupyter server {single:.2f} ms; air-jobs as bob through the hub's proxy "
        f"{team:.2f} ms ({team / single:.2f}x), at its own address {direct:.2f} ms ({direct / single:.2f}x)"
    )
    print(
        f"HTTP   GET jupyter-air/jobs on bob's Jupyter server (the panel's poll), answered by air-jobs through the "
        f"hub's proxy: {forwarded_proxied:.2f} ms ({forwarded_proxied / single:.2f}x the single-user route)"
    )
    print(
        f"HTTP   the same, air-jobs at its own address (as `make hub` configures it): {forwarded:.2f} ms "
        f"({forwarded / single:.2f}x; goal <= 1.5x)"
    )
