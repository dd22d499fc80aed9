"""A server (or `air`) started from a virtual environment without activating it: the kernels, terminals and workload
commands it starts find that environment's `python`, `air` and `torchrun` first."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest
from jupyter_client.manager import KernelManager

ENVIRONMENT_BIN = str(Path(sys.executable).parent)
NOT_ACTIVATED = "/usr/local/bin:/usr/bin:/bin"


@pytest.fixture
def not_activated(monkeypatch):
    """PATH as a service or a desktop launcher gives it: the environment's bin/ is not on it."""
    monkeypatch.setenv("PATH", NOT_ACTIVATED)
    assert shutil.which("air") is None


def kernel_prints(code: str) -> str:
    manager = KernelManager(kernel_name="python3")
    manager.start_kernel()
    client = manager.client()
    client.start_channels()
    try:
        client.wait_for_ready(timeout=120)
        out = []
        client.execute_interactive(code, timeout=120, output_hook=lambda m: out.append(m["content"].get("text", "")))
        return "".join(out)
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)


@pytest.mark.usefixtures("not_activated")
def test_kernels_and_terminals_of_the_server_find_its_environment_first(jp_serverapp):
    # Given a Jupyter server started with a PATH that lacks its environment's bin/

    # Then the environment kernels and terminals inherit has its bin/ first, the rest kept in order
    assert os.environ["PATH"] == os.pathsep.join([ENVIRONMENT_BIN, *NOT_ACTIVATED.split(os.pathsep)])
    # And a kernel started now finds this environment's air, python and torchrun
    found = kernel_prints(
        "import shutil\nfor name in ('air', 'python', 'torchrun'): print(name, shutil.which(name))"
    ).splitlines()
    assert found == [f"{name} {ENVIRONMENT_BIN}/{name}" for name in ("air", "python", "torchrun")]


@pytest.mark.usefixtures("not_activated")
def test_loading_the_magics_puts_the_environment_first_in_any_kernel():
    # Given a kernel started by another front end, with a PATH that lacks its environment's bin/
    # When the notebook loads the magics, Then `!air` finds this environment's air
    assert kernel_prints("%load_ext jupyter_air\n!command -v air").strip() == f"{ENVIRONMENT_BIN}/air"
