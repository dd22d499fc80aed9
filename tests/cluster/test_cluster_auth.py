"""Ray's token authentication: a second local user is locked out of the test clusters, jupyter_air joins with the
token (and says what to set without it), and a Jupyter server warns about a cluster that needs no token."""

from __future__ import annotations

import logging
import os
import subprocess
import sys

import pytest
from ray_cluster import LocalCluster
from ray_nobody import answers, as_nobody

pytestmark = [pytest.mark.ray, pytest.mark.usefixtures("ray_driver")]


def started(**options) -> LocalCluster:
    cluster = LocalCluster(**options)
    try:
        cluster.wait_for_nodes()
    except BaseException:
        cluster.shutdown()
        raise
    return cluster


@pytest.fixture
def open_head():
    """A head node started without token authentication, as Ray starts one by default with `ray start`."""
    cluster = started(environment={"RAY_AUTH_MODE": "disabled"})
    yield cluster
    cluster.shutdown()


def test_a_second_local_user_can_neither_call_nor_submit_jobs_to_a_test_cluster(ray_cluster):
    # Given the session's test cluster, with its dashboard, job server and dashboard agent on 127.0.0.1
    locked_head = ray_cluster
    token = os.environ["RAY_AUTH_TOKEN"]
    bearer = {"authorization": f"Bearer {token}"}
    agent = f"http://127.0.0.1:{locked_head.agent_port}"
    answers(f"{locked_head.dashboard_url}/api/version", bearer)
    answers(f"{agent}/api/healthz", bearer)

    from ray.job_submission import JobSubmissionClient

    def jobs() -> list[str]:
        return sorted(
            job.submission_id or job.job_id for job in JobSubmissionClient(locked_head.dashboard_url).list_jobs()
        )

    before = jobs()

    # When another local user calls its GCS and submits a job to the job server and to the agent, without the token
    got = as_nobody(locked_head.address, locked_head.dashboard_url, agent, token)

    # Then every door is shut, the lookup of a named actor (how remote calls find their parked node actors) included
    # (the same user with the token gets in: the ports were reachable)
    assert got == {
        "gcs": "UNAUTHENTICATED",
        "named_actor": "UNAUTHENTICATED",
        "job_server": 401,
        "agent": 401,
        "gcs_with_token": "OK",
        "job_list_with_token": 200,
    }
    # and no job was created
    assert jobs() == before


JOIN = "import sys; from jupyter_air.cluster.connect import connect; connect(sys.argv[1]); print('joined')"
ANOTHER_TOKEN = "0" * 64


@pytest.mark.parametrize(
    ("environment", "address", "shown"),
    [
        ({"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": "<the cluster's>"}, "gcs", "joined"),
        ({"RAY_ADDRESS": "gcs", "HOME_TOKEN": "<the cluster's>"}, "auto", "joined"),  # as ray.init("auto") does
        # this user's raylets (and, with other clusters of this user running, the record in the cluster's 0700 folder)
        (
            {"RAY_ADDRESS": "", "RAY_TMPDIR": "<the cluster's folder>", "HOME_TOKEN": "<the cluster's>"},
            "auto",
            "joined",
        ),
        (
            {"RAY_AUTH_MODE": "token"},
            "gcs",
            "requires Ray's token authentication (UNAUTHENTICATED) and no token is configured here: "
            "set RAY_AUTH_MODE=token and RAY_AUTH_TOKEN=",
        ),
        (
            {"RAY_AUTH_MODE": "token"},
            "client",
            "Ray Client server at ray://127.0.0.1:",
        ),
        (
            {"RAY_AUTH_TOKEN": "<the cluster's>"},
            "gcs",
            "a token is found here but RAY_AUTH_MODE=token is not set: set RAY_AUTH_MODE=token",
        ),
        (
            {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": ANOTHER_TOKEN},
            "gcs",
            "refused the token configured here (UNAUTHENTICATED)",
        ),
    ],
    ids=[
        "token",
        "auto-with-token-file",
        "auto-own-raylets",
        "no-token",
        "no-token-ray-client",
        "no-mode",
        "another-token",
    ],
)
def test_joining_a_locked_cluster_with_and_without_its_token(ray_cluster, tmp_path, environment, address, shown):
    # Given a process whose environment has the cluster's token, none, or another (and a home of its own)
    token = os.environ["RAY_AUTH_TOKEN"]
    gcs, client = ray_cluster.address, f"ray://127.0.0.1:{ray_cluster.client_port}"
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_AUTH_")} | {"HOME": str(tmp_path)}
    placeholders = {"<the cluster's>": token, "gcs": gcs, "<the cluster's folder>": str(ray_cluster.root)}
    for key, value in environment.items():
        value = placeholders.get(value, value)
        if key == "HOME_TOKEN":  # Ray's default token file, ~/.ray/auth_token
            (tmp_path / ".ray").mkdir()
            (tmp_path / ".ray" / "auth_token").write_text(value)
        else:
            env[key] = value

    # When it joins the cluster (through the GCS, Ray Client or 'auto')
    target = {"gcs": gcs, "client": client}.get(address, address)
    done = subprocess.run([sys.executable, "-c", JOIN, target], env=env, capture_output=True, text=True, timeout=180)

    # Then it joins with the cluster's token, and otherwise fails in the probe naming what to set
    if shown == "joined":
        assert done.returncode == 0 and done.stdout.strip() == "joined", done.stderr
    else:
        assert done.returncode != 0
        assert "ClusterUnreachable: " in done.stderr and shown in done.stderr, done.stderr
        assert "requires Ray's token" in done.stderr or "refused the token" in done.stderr


@pytest.fixture
def watched(request) -> LocalCluster:
    """The cluster a test's server watches: the fixture named by the test's parameter."""
    return request.getfixturevalue(request.param)


@pytest.fixture
def air_config(watched):
    return {
        "sample_interval_seconds": 0.2,
        "idle_timeout_seconds": 60,
        "gpu_source": "simulated",
        "ray_address": watched.address,
    }


def open_cluster_warnings(records) -> list[str]:
    return [r.getMessage() for r in records if "accepts calls without a token" in r.getMessage()]


@pytest.mark.parametrize("watched", ["open_head"], indirect=True)
async def test_an_open_cluster_lets_anyone_in_and_the_server_warns_once(watched, gpu, caplog):
    open_head = watched
    caplog.set_level(logging.WARNING)
    # Given a cluster started without token authentication: another local user's call is answered
    assert as_nobody(open_head.address)["gcs"] == "OK"

    # When a Jupyter server watching it answers the GPU panel twice
    first, second = await gpu(), await gpu()

    # Then it works, and the server warned once, naming the risk and how to turn authentication on
    assert first["cluster"]["error"] is None and second["cluster"]["error"] is None
    (warning,) = open_cluster_warnings(caplog.records)
    assert open_head.address in warning and "every local user of every node" in warning
    assert "RAY_AUTH_MODE=token" in warning


@pytest.mark.parametrize("watched", ["ray_cluster"], indirect=True)
async def test_a_locked_cluster_is_watched_without_a_warning(watched, gpu, caplog):
    caplog.set_level(logging.WARNING)
    # Given a server watching a cluster that requires the token (which the server has)
    # When it answers the GPU panel, Then every node is there and nothing warns about an open cluster
    payload = await gpu()
    assert payload["cluster"] == {"address": watched.address, "error": None}
    assert len(payload["nodes"]) >= 3
    assert open_cluster_warnings(caplog.records) == []
