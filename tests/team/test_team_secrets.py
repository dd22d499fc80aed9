"""The team's job service keeps its credentials out of every environment: the hub's token is wiped from its original
environment block, its MLflow and Ray credentials come from a file of mode 0600 (never from its environment, which
it refuses), and no process it starts gets them, while a workload's own variables stay."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from jupyter_air.workloads.supervisor.service_secrets import (
    SECRETS_FILE_ENV,
    SecretsError,
    read_secrets,
    without_service_secrets,
)

WIPE = """
import sys
from jupyter_air.team.environ import forget
print(forget(["JUPYTERHUB_API_TOKEN"]) == {"JUPYTERHUB_API_TOKEN": "hub-token-3f2a"}, flush=True)
sys.stdin.readline()
"""


def test_the_hub_token_is_wiped_from_the_original_environment_block():
    # Given a process started with the hub's token in its environment
    env = {**os.environ, "JUPYTERHUB_API_TOKEN": "hub-token-3f2a", "KEPT": "kept-value"}
    process = subprocess.Popen(
        [sys.executable, "-c", WIPE], env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        # When it takes the token with forget()
        assert process.stdout.readline() == "True\n"

        # Then /proc/<pid>/environ, which any process of its account reads, no longer holds it; the rest stays
        with open(f"/proc/{process.pid}/environ", "rb") as block:
            seen = block.read()
        assert b"hub-token-3f2a" not in seen and b"JUPYTERHUB_API_TOKEN" not in seen
        assert b"KEPT=kept-value" in seen
    finally:
        process.communicate("\n", timeout=30)


def test_the_service_refuses_to_start_with_a_credential_in_its_environment(tmp_path):
    # Given the service's environment as an old hub config gave it: the MLflow admin password in it
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MLFLOW_", "RAY_"))}
    env.update(MLFLOW_TRACKING_PASSWORD="mlflow-admin-pw", AIR_HOME=str(tmp_path / "air"))

    # When JupyterHub starts it
    started = subprocess.run(
        [sys.executable, "-m", "jupyter_air.team.service"], env=env, capture_output=True, text=True, timeout=120
    )

    # Then it exits before serving, naming the variable and where it belongs instead
    assert started.returncode == 1
    assert "air-jobs cannot start: MLFLOW_TRACKING_PASSWORD in the job service's environment" in started.stderr
    assert f"give its path as {SECRETS_FILE_ENV}" in started.stderr
    assert not (tmp_path / "air").exists()


def test_the_secrets_file_is_read_only_when_no_other_user_can_read_or_swap_it(tmp_path):
    # Given the service's secrets file, mode 0600
    path = tmp_path / "secrets.json"
    path.write_text(json.dumps({"MLFLOW_TRACKING_PASSWORD": "pw", "RAY_AUTH_TOKEN": "tok"}))
    path.chmod(0o600)
    # Then its credentials are read
    assert read_secrets(path) == {"MLFLOW_TRACKING_PASSWORD": "pw", "RAY_AUTH_TOKEN": "tok"}

    # When others may read it, it is a link, it names something else, or is no JSON object: refused, saying the fix
    path.chmod(0o644)
    with pytest.raises(SecretsError, match=r"can be read by other users \(mode 644\): run `chmod 600 "):
        read_secrets(path)
    path.chmod(0o600)
    (tmp_path / "link.json").symlink_to(path)
    with pytest.raises(SecretsError, match=f"{SECRETS_FILE_ENV}={tmp_path / 'link.json'} cannot be opened"):
        read_secrets(tmp_path / "link.json")
    path.write_text(json.dumps({"JUPYTERHUB_API_TOKEN": "x"}))
    with pytest.raises(SecretsError, match="unknown name.s. JUPYTERHUB_API_TOKEN; it holds MLFLOW_TRACKING_PASSWORD"):
        read_secrets(path)
    path.write_text("[1]")
    with pytest.raises(SecretsError, match="must be a JSON object of strings"):
        read_secrets(path)


def test_processes_the_service_starts_get_none_of_its_credentials_but_keep_their_own():
    # Given the service's environment (its marker, its credentials loaded in memory), and a user's own `air run`
    service = {"AIR_JOBS_SERVICE": "1", "MLFLOW_TRACKING_PASSWORD": "pw", "RAY_AUTH_TOKEN": "tok", "PATH": "/bin"}
    service |= {"JUPYTERHUB_API_TOKEN": "hub", "MLFLOW_TRACKING_USERNAME": "admin", "MLFLOW_TRACKING_TOKEN": "t"}
    user = {"MLFLOW_TRACKING_TOKEN": "alices-own", "PATH": "/bin"}

    # Then the service's children keep only what is no credential; a user's jobs keep theirs
    assert without_service_secrets(service) == {"AIR_JOBS_SERVICE": "1", "PATH": "/bin"}
    assert without_service_secrets(user) == user
    assert without_service_secrets({"AIR_JOBS_RUN_AS": "owner", "RAY_AUTH_TOKEN": "tok"}) == {
        "AIR_JOBS_RUN_AS": "owner"
    }
