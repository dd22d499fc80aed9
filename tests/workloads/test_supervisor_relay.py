"""A Ray Job's entrypoint relaying to a supervisor forked elsewhere, with real processes and no cluster: Ray's stop
passed on, the supervisor recorded as the job's, the exit status Ray is to see; and the supervisor's watch of its
relay. (The Ray Jobs tests run it on a real cluster, forked from a real zygote.)"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import pytest
from workload_helpers import job_spec

from jupyter_air import procs
from jupyter_air.workloads.state.store import JobStore
from jupyter_air.workloads.supervisor import relay

#: A relay in a process of its own (it sets its SIGTERM handler): it follows the "supervisor" whose PID it reads
#: on stdin, and exits with what ``follow`` returns.
RELAY = textwrap.dedent(
    """\
    import sys
    from pathlib import Path
    from jupyter_air.workloads.state.store import JobStore
    from jupyter_air.workloads.supervisor import relay

    store, job_run_id = JobStore(Path(sys.argv[1])), sys.argv[2]
    print("ready", flush=True)
    sys.exit(relay.follow(store, job_run_id, int(sys.stdin.readline())))
    """
)
#: A "supervisor" that ends the job as ``argv[2]`` says on SIGTERM, after writing the signal down.
SUPERVISOR = textwrap.dedent(
    """\
    import signal, sys, time
    from pathlib import Path
    from jupyter_air.workloads.state.store import JobStore

    def stop(signum, frame):
        JobStore(Path(sys.argv[1])).finish(sys.argv[2], sys.argv[3], "stopped")
        sys.exit(0)

    signal.signal(signal.SIGTERM, stop)
    print("ready", flush=True)
    time.sleep(60)
    """
)


@pytest.mark.parametrize(("ended", "code"), [("SUCCEEDED", 0), ("CANCELED", 1)])
def test_the_relay_passes_rays_stop_on_and_exits_as_the_job_ended(tmp_path, ended, code):
    store = JobStore(tmp_path / "air")
    job = store.create_job(job_spec(tmp_path), "w.yaml", "me", "ray-job", "")
    home, job_run_id = str(store.home), job.job_run_id
    # Given a supervisor forked elsewhere (not the relay's child), and the Ray Job's entrypoint relaying to it
    supervisor = subprocess.Popen(
        [sys.executable, "-c", SUPERVISOR, home, job_run_id, ended], stdout=subprocess.PIPE, text=True
    )
    entrypoint = subprocess.Popen(
        [sys.executable, "-c", RELAY, home, job_run_id], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert supervisor.stdout.readline() == entrypoint.stdout.readline() == "ready\n"
        entrypoint.stdin.write(f"{supervisor.pid}\n")
        entrypoint.stdin.flush()
        deadline = time.monotonic() + 30
        while store.get(job_run_id).supervisor_pid != supervisor.pid:
            assert time.monotonic() < deadline, "the relay never recorded the supervisor"
            time.sleep(0.05)
        # Then the supervisor is the job's, Ray's status RUNNING
        recorded = store.get(job_run_id)
        assert recorded.ray_status == "RUNNING" and recorded.supervisor_started == procs.start_time(supervisor.pid)
        # When Ray stops the job (SIGTERM to its entrypoint)
        entrypoint.send_signal(signal.SIGTERM)
        # Then the supervisor got it, and the entrypoint exits once it is gone: 0 only for a job that SUCCEEDED
        assert supervisor.wait(30) == 0
        assert entrypoint.wait(30) == code
        assert store.get(job_run_id).status == ended
    finally:
        for process in (supervisor, entrypoint):
            if process.poll() is None:
                process.kill()
                process.wait()


def test_a_forked_supervisor_is_canceled_once_its_relay_is_gone(monkeypatch):
    relay_process = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    monkeypatch.setenv(relay.RELAY_ENV, f"{relay_process.pid} {procs.start_time(relay_process.pid)}")
    cancel = threading.Event()
    # Given a supervisor that watches the relay named in its environment (no child of its own sees the name)
    relay.watch(cancel)
    assert relay.RELAY_ENV not in os.environ
    time.sleep(0.2)
    assert not cancel.is_set()
    # When Ray kills the relay
    relay_process.kill()
    relay_process.wait()
    # Then the supervisor's cancel is set
    assert cancel.wait(10)
