"""A call process that does not end on its SIGTERM (blocked in PyTorch's code, as an elastic agent in its exit
barrier is) is killed by its fork server after the stop's grace, and reported ended."""

from __future__ import annotations

import json
import subprocess
import sys

#: In a process of its own (the fork server reaps any child of its process): a fork server's state with one call
#: whose process ignores SIGTERM, stopped, then looked at each tick; what it reported, and when.
SCRIPT = r"""
import io, json, signal, subprocess, sys, time
from jupyter_air.training import forkserver

forkserver._CALL_STOP_SECONDS = 0.5
events = io.StringIO()
server = forkserver.Server(events, lambda: True)
stubborn = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); print('up', flush=True); time.sleep(60)"
call = subprocess.Popen([sys.executable, "-c", stubborn], stdout=subprocess.PIPE)
call.stdout.readline()
server.calls[call.pid] = "call-1"
started = time.monotonic()
server.stop("call-1")
time.sleep(0.2)
server.reap()
alive_after_term = "ended" not in events.getvalue()
while "ended" not in events.getvalue() and time.monotonic() - started < 20:
    server.reap()
    time.sleep(0.05)
print(json.dumps({"alive_after_term": alive_after_term, "events": events.getvalue().splitlines(),
                  "seconds": time.monotonic() - started, "calls": list(server.calls)}))
"""


def test_a_call_process_deaf_to_sigterm_is_killed_after_the_stops_grace():
    # Given a fork server's call whose process ignores SIGTERM
    # When it is stopped, and the server looks at its calls as its loop does
    done = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout)

    # Then the SIGTERM alone did not end it, the SIGKILL after the grace did, and the call was reported ended by it
    assert seen["alive_after_term"]
    assert [json.loads(line) for line in seen["events"]] == [{"event": "ended", "id": "call-1", "code": -9}]
    assert seen["calls"] == []
