"""JupyterLab server configuration for the browser tests (Galata); never use it in production."""

import atexit
import os
import pathlib
import sys
import tempfile

from jupyterlab.galata import configure_jupyter_server

# Galata's folders (the served root, the workspaces, the terminal's rc file) go into the test session's folder,
# which `make test-ui` removes after a passing run, not loose into the system's temp folder.
if os.environ.get("JUPYTER_AIR_UI_ROOT"):
    tempfile.tempdir = os.path.join(os.environ["JUPYTER_AIR_UI_ROOT"], "galata")
    os.makedirs(tempfile.tempdir, mode=0o700, exist_ok=True)
configure_jupyter_server(c)  # noqa: F821 (c is the config object Jupyter passes in)
tempfile.tempdir = None

# Each Playwright project starts its own server on its own fixed port (see playwright.config.ts).
c.ServerApp.port = int(os.environ.get("JUPYTER_AIR_UI_PORT", "8891"))  # noqa: F821
c.ServerApp.port_retries = 0  # noqa: F821
c.ServerApp.allow_root = True  # noqa: F821

# The GPU source comes from JUPYTER_AIR_GPU_SOURCE (simulated or none); samples are taken often so
# that a Refresh always brings new numbers within a short test.
c.JupyterAir.simulated_gpus = 2  # noqa: F821
c.JupyterAir.sample_interval_seconds = 2  # noqa: F821

# JUPYTER_AIR_UI_IDLE_MINUTES=<minutes> makes a kernel left idle on GPU memory an idle GPU holder that soon (as
# `make demo` does, shorter), checked every second: the simulated GPUs' own holders, kernels that ran a call.
if os.environ.get("JUPYTER_AIR_UI_IDLE_MINUTES"):
    c.JupyterAir.idle_holder_minutes = float(os.environ["JUPYTER_AIR_UI_IDLE_MINUTES"])  # noqa: F821
    c.JupyterAir.idle_holder_check_seconds = 1  # noqa: F821

# JUPYTER_AIR_UI_TOKEN turns Jupyter's login back on (Galata turns it off), for the test of links that a
# logged-out browser opens.
if os.environ.get("JUPYTER_AIR_UI_TOKEN"):
    c.IdentityProvider.token = os.environ["JUPYTER_AIR_UI_TOKEN"]  # noqa: F821

# JUPYTER_AIR_UI_SERVER_EXTENSION=off runs JupyterLab with the frontend but without the server
# extension, as on a server where the Python package is missing.
c.ServerApp.jpserver_extensions = {  # noqa: F821
    "jupyter_air": os.environ.get("JUPYTER_AIR_UI_SERVER_EXTENSION", "on") != "off"
}

# JUPYTER_AIR_UI_FAKE_NVML=<file> installs the tests' fake `pynvml` (one idle GPU) whose compute processes are
# the `[[pid, bytes], ...]` the file holds when read: a test makes a kernel hold GPU memory by writing its pid
# there. The idle-holder check then runs every second with a 3-second threshold.
if os.environ.get("JUPYTER_AIR_UI_FAKE_NVML"):
    os.environ["AIR_TEST_NVML_PROCESSES"] = os.environ["JUPYTER_AIR_UI_FAKE_NVML"]
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "tests" / "nvml_processes"))
    import pynvml  # noqa: F401 - the fake, in sys.modules for the server's NVML source

    c.JupyterAir.gpu_source = "nvml"  # noqa: F821
    c.JupyterAir.idle_holder_minutes = 0.05  # noqa: F821
    c.JupyterAir.idle_holder_check_seconds = 1  # noqa: F821

# Once the server has shut its kernels down (which may end their runs through AIR_HOME's MLflow server), stop the
# resident processes of its AIR_HOME (that MLflow server, the fork server zygote) instead of leaving them running
# until their idle stop.
if os.environ.get("AIR_HOME"):
    sys.path.append(str(pathlib.Path(__file__).resolve().parents[1] / "tests"))
    from resident_servers import stop_all

    atexit.register(stop_all, pathlib.Path(os.environ["AIR_HOME"]))
