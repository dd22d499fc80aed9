"""One call's process, forked from the fork server: it runs the elastic agent and owns every process of the call.

It is a child subreaper, so what a rank starts stays below it even when it leaves its session and clears
its environment (``setsid env -i ...``); on SIGTERM (the kernel's Stop, timeout or interrupt, or its fork
server ending) it stops them all, and when the agent returns it stops whatever is left. How the launch
ended goes to the call's folder (:mod:`~jupyter_air.training.outcome_file`).
"""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

from jupyter_air import procs
from jupyter_air.training.launch_plan import NodePlace, launch_config
from jupyter_air.training.node_call import CALL_ID_ENV, PARENT_ENV
from jupyter_air.training.outcome_file import write_outcome
from jupyter_air.training.worker import run_rank


def run(request: dict) -> int:
    """Run the call described by ``request`` (``id``, ``folder``, ``place``); the process's exit code."""
    folder = Path(request["folder"])
    place = NodePlace(**request["place"])
    procs.set_name(os.path.basename(sys.executable))  # not its fork server's name (which may name its owner)
    procs.become_subreaper()
    tree = procs.ProcessTree(marker={CALL_ID_ENV: request["id"]}, below=os.getpid())
    stopped = []

    def stop(signum, frame) -> None:
        if not stopped:
            stopped.append(signum)
            tree.stop()

    signal.signal(signal.SIGTERM, stop)
    os.environ.update({CALL_ID_ENV: request["id"], PARENT_ENV: str(os.getpid())})
    outcome = _launch(folder, place)
    tree.stop()  # what the ranks left running: daemons, adopted orphans
    if stopped:
        outcome["stopped"] = True
    write_outcome(folder, outcome)
    return 0


def _launch(folder: Path, place) -> dict:
    from torch.distributed.elastic.multiprocessing.errors import ChildFailedError
    from torch.distributed.launcher.api import elastic_launch

    try:
        elastic_launch(launch_config(place, folder), run_rank)(str(folder))
    except ChildFailedError as exc:
        rank, first = exc.get_first_failure()
        return {
            "status": "failed",
            "rank": rank,
            "exitcode": first.exitcode,
            "failures": {str(r): f.exitcode for r, f in exc.failures.items()},
        }
    except BaseException as exc:  # noqa: BLE001 - any other end of the launch is reported to the kernel
        return {"status": "error", "message": f"{type(exc).__name__}: {exc}"}
    return {"status": "ok"}
