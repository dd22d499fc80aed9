"""The wheel from `make dist`, installed into a fresh virtual environment outside the repository, works.

Selected with `-m dist` (by `make test-dist`, part of `make test`): it builds nothing itself, it installs
`dist/jupyter_air-*.whl` with its dependencies from the package index (about a minute with a warm cache).
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

pytestmark = pytest.mark.dist

REPO = Path(__file__).resolve().parents[2]
VERSION = json.loads((REPO / "package.json").read_text())["version"]


@pytest.fixture(scope="module")
def venv(tmp_path_factory) -> Path:
    """A new virtual environment with the wheel and JupyterLab (not a dependency) installed, nothing else."""
    wheels = sorted((REPO / "dist").glob("jupyter_air-*.whl"))
    assert wheels, "no wheel in dist/: run `make dist` first"
    folder = tmp_path_factory.mktemp("fresh") / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(folder)], check=True)
    pip = [str(folder / "bin" / "python"), "-m", "pip", "install", "-q"]
    subprocess.run([*pip, str(wheels[-1]), "jupyterlab>=4.6,<5"], check=True, cwd=folder.parent)
    return folder


def test_the_wheel_installs_an_enabled_server_extension_and_labextension(venv):
    env = {**os.environ, "PATH": f"{venv / 'bin'}{os.pathsep}{os.environ['PATH']}"}
    env.pop("PYTHONPATH", None)

    def listed(*command: str) -> str:
        done = subprocess.run(command, env=env, cwd=venv.parent, capture_output=True, text=True, timeout=300)
        return re.sub(r"\x1b\[[0-9;]*m", "", done.stdout + done.stderr)  # without the terminal colours

    # Given the wheel installed in a fresh environment, When Jupyter lists its extensions
    server = listed("jupyter", "server", "extension", "list")
    lab = listed("jupyter", "labextension", "list")
    # Then both parts are enabled, with the real version (not 0.0.0+unknown), from that environment
    assert "jupyter_air enabled" in server and f"jupyter_air {VERSION} OK" in server, server
    assert f"jupyter-air v{VERSION} enabled OK" in lab, lab
    assert str(REPO) not in server + lab
    # And the air command works without the repository
    assert "Run training workloads described in YAML" in listed("air", "--help")


def test_a_server_started_from_the_fresh_environment_answers_the_version(venv, tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {**os.environ, "PATH": f"{venv / 'bin'}{os.pathsep}{os.environ['PATH']}", "AIR_HOME": str(tmp_path / "air")}
    env.pop("PYTHONPATH", None)
    command = [
        str(venv / "bin" / "jupyter"),
        "server",
        f"--port={port}",
        "--ip=127.0.0.1",
        "--no-browser",
        "--ServerApp.port_retries=0",
        "--IdentityProvider.token=wheel-test",
        "--ServerApp.allow_root=True",
    ]
    server = subprocess.Popen(command, env=env, cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        request = urllib.request.Request(
            f"http://127.0.0.1:{port}/jupyter-air/version", headers={"Authorization": "token wheel-test"}
        )
        deadline = time.monotonic() + 90
        while True:
            try:
                with urllib.request.urlopen(request, timeout=5) as response:
                    assert json.loads(response.read()) == {"version": VERSION}
                    break
            except OSError:
                if time.monotonic() > deadline or server.poll() is not None:
                    raise
                time.sleep(0.5)
    finally:
        server.terminate()
        server.wait(30)
