"""What every rank runs: unpack the shipped function, run it, write its result or error for the kernel."""

from __future__ import annotations

import json
import linecache
import os
import pathlib
import signal
import sys
import time
import traceback

import psutil

from jupyter_air import procs
from jupyter_air.training import rendezvous
from jupyter_air.training.node_call import PARENT_ENV

#: Seconds a rank waits for the kernel to create the call's run (a first run may migrate the database).
_RELEASE_TIMEOUT_SECONDS = 300
#: Environment the elastic agent sets for each worker; it wins over the kernel's snapshot.
_ELASTIC_KEYS = {
    "LOCAL_RANK",
    "RANK",
    "GROUP_RANK",
    "ROLE_RANK",
    "ROLE_NAME",
    "LOCAL_WORLD_SIZE",
    "WORLD_SIZE",
    "GROUP_WORLD_SIZE",
    "ROLE_WORLD_SIZE",
    "MASTER_ADDR",
    "MASTER_PORT",
    "OMP_NUM_THREADS",
    "TORCH_NCCL_ASYNC_ERROR_HANDLING",
}


def _apply_environment(kernel_env: dict[str, str]) -> None:
    """Make this process's environment the kernel's at call time plus the agent's rank variables."""
    own = {k: v for k, v in os.environ.items() if k in _ELASTIC_KEYS or k.startswith("TORCHELASTIC_")}
    os.environ.clear()
    os.environ.update(kernel_env)
    os.environ.update(own)


def _wait_for_release(env_file: pathlib.Path) -> dict[str, str]:
    """The environment the kernel releases once the call's MLflow run exists (it is made while ranks start)."""
    deadline = time.monotonic() + _RELEASE_TIMEOUT_SECONDS
    while not env_file.exists():
        if time.monotonic() > deadline:
            raise SystemExit(f"the kernel did not release this call within {_RELEASE_TIMEOUT_SECONDS} s")
        time.sleep(0.005)
    return json.loads(env_file.read_text())


def _redirect_output(log_path: pathlib.Path) -> None:
    """Send this process's stdout and stderr (Python's and the C library's) to one line-buffered file."""
    sys.stdout.flush()
    sys.stderr.flush()
    fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)
    sys.stdout = open(1, "w", buffering=1, encoding="utf-8", errors="replace", closefd=False)  # noqa: SIM115
    sys.stderr = open(2, "w", buffering=1, encoding="utf-8", errors="replace", closefd=False)  # noqa: SIM115


def _register_sources(sources: dict[str, list[str]]) -> None:
    """Give tracebacks the notebook's source lines for code that has no file on disk."""
    for filename, lines in sources.items():
        linecache.cache[filename] = (sum(map(len, lines)), None, lines, filename)


def _select_device(local_rank: int) -> None:
    import torch

    if torch.cuda.is_available():
        torch.cuda.set_device(local_rank % torch.cuda.device_count())


def run_rank(call_dir: str) -> None:
    """Entry point of one rank; ``call_dir`` holds the payload and receives logs, results and errors."""
    import cloudpickle

    folder = pathlib.Path(call_dir)
    procs.die_with_parent(int(os.environ[PARENT_ENV]), signal.SIGKILL)  # never outlive the call's process
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # a rank ends on SIGTERM, as a script does: the call process's
    # handler, which its fork handed down, would stop the call's other processes and let this one run on
    rank = int(os.environ["RANK"])
    local_rank = int(os.environ["LOCAL_RANK"])
    me = psutil.Process()
    (folder / "pids" / f"rank_{rank}.pid").write_text(f"{me.pid} {me.create_time()}")
    _redirect_output(folder / "logs" / f"rank_{rank}.log")
    _apply_environment(_wait_for_release(folder / "env.json"))
    if os.environ["GROUP_WORLD_SIZE"] == "1":
        rendezvous.use_private_store(folder)
    context = json.loads((folder / "context.json").read_text())
    sys.path[:] = context["sys_path"]
    os.chdir(context["cwd"])
    _register_sources(context["sources"])
    _select_device(local_rank)
    with open(folder / "payload.pkl", "rb") as f:  # after the environment: unpickling may import modules
        payload = cloudpickle.load(f)
    try:
        result = payload["function"](*payload["args"], **payload["kwargs"])
    except SystemExit as exc:
        sys.stdout.flush()
        sys.stderr.flush()
        if exc.code not in (None, 0):
            raise
        result = None
    except BaseException as exc:  # noqa: BLE001 - reported to the kernel, then the rank exits 1
        # Skip this module's own frame: the traceback starts in the user's code.
        text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__.tb_next))
        error = {"exception_type": type(exc).__qualname__, "exception_message": str(exc), "traceback": text}
        (folder / "errors" / f"rank_{rank}.json").write_text(json.dumps(error))
        sys.stderr.write(text)
        sys.stdout.flush()
        sys.stderr.flush()
        raise SystemExit(1) from None  # exits quietly: the traceback is already in this rank's log
    try:
        data = cloudpickle.dumps(result)
    except Exception as exc:  # noqa: BLE001 - any pickling failure is reported with the result's type
        data = cloudpickle.dumps(UnpicklableResult(type(result).__qualname__, str(exc)))
    (folder / "results" / f"rank_{rank}.pkl").write_bytes(data)
    sys.stdout.flush()
    sys.stderr.flush()


class UnpicklableResult:
    """Stands for a rank's return value that could not be sent back to the kernel."""

    def __init__(self, type_name: str, reason: str):
        self.type_name = type_name
        self.reason = reason

    def __repr__(self) -> str:
        return f"<unpicklable {self.type_name}: {self.reason}>"
