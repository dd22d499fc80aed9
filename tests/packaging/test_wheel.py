"""The wheel as `pip install git+...` builds it, installed into a fresh virtual environment outside the repository.

Selected with `-m dist` (by `make test-dist`, part of `make test`): it clones the commit under test into a temp
folder, builds the wheel there with `pip wheel` (build isolation, the frontend built by the build hook) and
installs it with its dependencies from the package index.
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
import zipfile
from pathlib import Path

import pytest

# Building the wheel (frontend included) and installing its dependencies take minutes on a busy machine.
pytestmark = [pytest.mark.dist, pytest.mark.timeout(1200)]

REPO = Path(__file__).resolve().parents[2]
VERSION = json.loads((REPO / "package.json").read_text())["version"]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """The wheel `pip wheel` builds from a fresh clone of this commit (nothing generated in it beforehand)."""
    folder = tmp_path_factory.mktemp("clone")
    subprocess.run(["git", "clone", "-q", str(REPO), str(folder / "src")], check=True)
    out = folder / "wheels"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(out), str(folder / "src")],
        check=True,
        env={**os.environ, "PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD": "1"},
    )
    (built,) = out.glob("jupyter_air-*.whl")
    return built


def test_the_wheel_holds_its_version_file_and_the_built_labextension(wheel):
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        version_file = archive.read("jupyter_air/_version.py").decode()
    assert re.search(rf"__version__ = .*['\"]{re.escape(VERSION)}['\"]", version_file), version_file
    assert f"jupyter_air-{VERSION}.data/data/share/jupyter/labextensions/jupyter-air/package.json" in names


@pytest.fixture(scope="module")
def venv(wheel, tmp_path_factory) -> Path:
    """A new virtual environment with the wheel and JupyterLab (not a dependency) installed, nothing else."""
    folder = tmp_path_factory.mktemp("fresh") / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(folder)], check=True)
    # --no-compile: bytecode for the few modules the tests import is written as they are imported, not for all of
    # MLflow's and JupyterLab's dependencies ahead
    pip = [str(folder / "bin" / "python"), "-m", "pip", "install", "-q", "--no-compile"]
    subprocess.run([*pip, str(wheel), "jupyterlab>=4.6,<5"], check=True, cwd=folder.parent)
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
