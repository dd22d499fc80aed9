"""First use: MLflow, the store and the fork server (which imports torch, the caller never does) are prepared ahead."""

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
from jupyter_air.tracking import store
from jupyter_air.training.launcher import Launcher

@distributed(gpus=2)
def train():
    return 1

deadline = time.monotonic() + 120
while time.monotonic() < deadline and not (Launcher._current and Launcher._current.ready.done() and store._prepared):
    time.sleep(0.1)
ready = Launcher._current.ready.result(0)
print("then", {"fork_server": "cuda_devices" in ready, "store": bool(store._prepared), "torch": "torch" in sys.modules})
"""

LOADED = """
import time
from IPython.core.interactiveshell import InteractiveShell
from jupyter_air.tracking import store
InteractiveShell.instance().run_line_magic("load_ext", "jupyter_air")
deadline = time.monotonic() + 120
while time.monotonic() < deadline and not store._prepared:
    time.sleep(0.1)
print("store prepared", bool(store._prepared))
"""


def run(code: str) -> str:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_defining_a_call_prepares_mlflow_the_store_and_the_fork_server_in_the_background(store):
    # Given a fresh process, When a function is decorated with @distributed (and not called)
    # Then the store and the fork server become ready in the background, so the first call does not wait
    assert "then {'fork_server': True, 'store': True, 'torch': False}" in run(DEFINED)


def test_loading_the_magics_prepares_mlflow_and_the_store_in_the_background(store):
    assert "store prepared True" in run(LOADED)
