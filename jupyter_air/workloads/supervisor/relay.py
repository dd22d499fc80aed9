"""A Ray Job's supervisor forked warm, its entrypoint a relay.

Ray runs a Ray Job's entrypoint as a new Python, which would import Ray (about 1.5 s of CPU here) before it joins the
cluster. Where AIR_HOME's zygote runs for the submitter's environment (a Jupyter server starts it; it imports Ray
once, for the first supervisor that drives Ray nodes), the entrypoint has it fork the supervisor instead, through the
``jupyter_air.warm_starts`` entry point (the zygote belongs to a layer above this one), and relays: Ray's stop
(SIGTERM, SIGINT) to the supervisor, the supervisor's end to Ray (exit status 0 when the job SUCCEEDED, else 1, as
a supervisor started cold). The supervisor is no child of the relay, so it watches it: once Ray has killed the relay,
it cancels the job as Ray's stop would have.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import threading
from importlib.metadata import entry_points

from jupyter_air import procs
from jupyter_air.workloads.state.store import JobStore

#: Entry-point group of the warm starts a layer above provides: ``ray-supervisor``, the
#: :data:`~jupyter_air.workloads.supervisor.executor.WarmStart` of a Ray Job's supervisor.
WARM_STARTS = "jupyter_air.warm_starts"
#: Environment variable that tells a forked supervisor its relay (``PID START_TIME``).
RELAY_ENV = "AIR_SUPERVISOR_RELAY"

log = logging.getLogger(__name__)


def fork(job_run_id: str, saved: dict[str, str], store: JobStore, user_umask: int) -> int | None:
    """The PID of the job's supervisor, forked warm in the job's folder with the submitter's environment ``saved``,
    Ray's own variables of this Ray Job and the user's umask, its output where this process's goes; None when nothing
    warm runs for that environment (the supervisor then runs in this process)."""
    env = {k: v for k, v in saved.items() if not k.startswith("RAY_")}
    env.update({k: v for k, v in os.environ.items() if k.startswith("RAY_")})
    env.update({"AIR_HOME": str(store.home), RELAY_ENV: f"{os.getpid()} {procs.start_time(os.getpid())}"})
    for point in entry_points(group=WARM_STARTS, name="ray-supervisor"):
        umask = os.umask(user_umask)
        try:
            return point.load()(job_run_id, env, store.job_dir(job_run_id), 1)
        finally:
            os.umask(umask)
    return None


def follow(store: JobStore, job_run_id: str, pid: int) -> int:
    """Relay Ray's stop to the supervisor ``pid`` until it ends (recorded as the job's supervisor, which Ray runs);
    the exit status Ray is to see."""
    started = procs.start_time(pid)
    store.update(job_run_id, ray_status="RUNNING", supervisor_pid=pid, supervisor_started=started)
    log.info("supervisor %d forked warm; this Ray Job's entrypoint relays to it", pid)

    def relay(signum, frame) -> None:
        if procs.is_alive(pid, started):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signum)

    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, relay)
    procs.wait_gone(pid, started)
    return 0 if store.get(job_run_id).status == "SUCCEEDED" else 1


def watch(cancel: threading.Event) -> None:
    """In a supervisor forked for a relay: set ``cancel`` once the relay is gone (Ray killed it)."""
    found = os.environ.pop(RELAY_ENV, "")
    if not found:
        return
    pid, started = found.split(" ")
    relay = (int(pid), None if started == "None" else float(started))

    def look() -> None:
        procs.wait_gone(*relay)
        log.warning("the Ray Job's entrypoint (process %s) is gone: the job is canceled", pid)
        cancel.set()

    threading.Thread(target=look, name="air-relay-watch", daemon=True).start()
