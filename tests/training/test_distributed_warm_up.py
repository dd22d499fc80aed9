"""First use: AIR_HOME's MLflow server and the fork server are started in the background; the caller imports
neither MLflow nor torch."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys

import pytest

pytestmark = pytest.mark.usefixtures("no_orphans")

REPO = pathlib.Path(__file__).resolve().parents[2]

DEFINED = """
import sys, time
from jupyter_air import distributed
from jupyter_air.tracking import resident
from jupyter_air.tracking import store
from jupyter_air.training.forkserver_client import Launcher

@distributed(gpus=2)
def train():
    return 1

server = lambda: resident.find(store.tracking_uri())
deadline = time.monotonic() + 120
while time.monotonic() < deadline and not (Launcher._current and Launcher._current.ready.done() and server()):
    time.sleep(0.1)
ready = {"fork_server": "cuda_devices" in Launcher._current.ready.result(0), "server": server() is not None}
print("then", ready, sorted(m for m in ("mlflow", "torch") if m in sys.modules))
"""

LOADED = """
import sys, time
from IPython.core.interactiveshell import InteractiveShell
from jupyter_air.tracking import resident
from jupyter_air.tracking import store
InteractiveShell.instance().run_line_magic("load_ext", "jupyter_air")
deadline = time.monotonic() + 120
while time.monotonic() < deadline and not resident.find(store.tracking_uri()):
    time.sleep(0.1)
print("server started", resident.find(store.tracking_uri()) is not None, "mlflow" in sys.modules)
"""


def run(code: str) -> str:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_defining_a_call_starts_the_mlflow_server_and_the_fork_server_in_the_background(store):
    # Given a fresh process, When a function is decorated with @distributed (and not called)
    # Then AIR_HOME's MLflow server and the fork server are started in the background, so the first call does not
    # wait for them, and neither MLflow nor torch is imported
    assert "then {'fork_server': True, 'server': True} []" in run(DEFINED)


def test_loading_the_magics_starts_the_mlflow_server_in_the_background(store):
    assert "server started True False" in run(LOADED)
