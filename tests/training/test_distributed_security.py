"""Another local user against a one-node call: nothing to connect to but the ranks' gloo sockets, nothing unpickled."""

from __future__ import annotations

import os
import subprocess
import sysconfig
import threading
import time

import psutil
import pytest

from jupyter_air import DistributedError, distributed

pytestmark = [pytest.mark.usefixtures("no_orphans"), pytest.mark.alone]

NOBODY = 65534

#: Run as another user: every TCP listener that appears on loopback once it started is tried as a torch TCPStore;
#: every key it lists is overwritten with a pickle (raw and base64, as torch's dynamic rendezvous stores it) that
#: would create ``marker`` as whoever unpickles it.
ATTACKER = """
import base64, os, pickle, signal, sys, time
from datetime import timedelta
sys.path.append({site!r})
from torch.distributed import TCPStore

class Hostile:
    def __reduce__(self):
        return (os.system, ("touch {marker}",))

raw = pickle.dumps(Hostile())
values = [raw, base64.b64encode(raw)]

def listeners():
    ports = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in open(table).read().splitlines()[1:]:
            local, state = line.split()[1], line.split()[3]
            address, port = local.rsplit(":", 1)
            if state == "0A" and address in ("0100007F", "00000000000000000000000001000000"):
                ports.add(int(port, 16))
    return ports

def attack(port):
    store = TCPStore("127.0.0.1", port, is_master=False, timeout=timedelta(seconds=1))
    for _ in range(20):  # again and again: the store is read about every second
        for key in store.list_keys() + ["torch.rendezvous.run", "torchelastic/role_info/0"]:
            for value in values:
                store.set(key, value)
        time.sleep(0.1)

tried = listeners()  # what listened before the call is not the call's
before, attacked = len(tried), []
print("ready", flush=True)
deadline = time.monotonic() + {seconds}
while time.monotonic() < deadline and not os.path.exists({stop!r}):
    for port in listeners() - tried:
        tried.add(port)
        child = os.fork()
        if child == 0:  # a hung connection must not stop the attack on the next listener
            try:
                attack(port)
            finally:
                os._exit(0)
        attacked.append(child)
    time.sleep(0.05)
time.sleep(3)
for child in attacked:
    os.kill(child, signal.SIGKILL)
    os.waitpid(child, 0)
print("tried", len(tried) - before, flush=True)
"""


def slow_all_reduce(seconds):
    import time

    import torch
    import torch.distributed as dist

    dist.init_process_group("gloo")
    value = torch.ones(1) * (dist.get_rank() + 1)
    dist.all_reduce(value)
    time.sleep(seconds)  # the other user has time to find every listener and write to it
    dist.barrier()
    return value.item()


@pytest.mark.skipif(os.geteuid() != 0, reason="acting as a second user needs root to switch users")
def test_another_user_writing_pickles_into_every_loopback_store_runs_nothing(store, shared_tmp, tmp_path):
    # Given another local user who, while a call runs, writes hostile pickles into every TCP store on loopback
    marker, stop = tmp_path / "ran-as-the-notebook-user", shared_tmp / "stop"
    script = shared_tmp / "attacker.py"
    site = sysconfig.get_paths()["purelib"]
    script.write_text(ATTACKER.format(site=site, marker=marker, seconds=120, stop=str(stop)))
    attacker = subprocess.Popen(
        ["/usr/bin/python3.11", str(script)],
        user=NOBODY,
        group=NOBODY,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert attacker.stdout.readline() == "ready\n"
    try:
        # When a 2-rank gloo call runs for a few seconds
        results = distributed(slow_all_reduce, gpus=2, experiment="security-hostile-store").distributed(3)
    except DistributedError as exc:
        results = exc
    finally:
        stop.touch()
        report = attacker.communicate(timeout=60)[0]

    # Then no pickle of the other user was ever loaded, and the call finished with the right result
    assert not marker.exists(), "another user's pickle ran as the notebook's user"
    assert results == [3.0, 3.0]
    tried = int(report.split()[1])
    assert tried >= 2, report  # it did find listeners to attack: each rank's gloo socket


def report_listening_sockets():
    import psutil
    import torch.distributed as dist

    dist.init_process_group("gloo")
    dist.barrier()
    listening = {c.laddr.ip for c in psutil.Process().net_connections("inet") if c.status == psutil.CONN_LISTEN}
    dist.barrier()
    return sorted(listening)


def test_only_the_ranks_listen_and_on_loopback_only(store):
    # Given the listening sockets of this process (the kernel) and of its fork server, sampled during a call
    seen: set[tuple[int, str]] = set()
    done = threading.Event()

    def sample():
        while not done.is_set():
            me = psutil.Process()
            for proc in [me, *me.children()]:  # the fork server, not its calls' processes
                if "forkserver" in " ".join(proc.cmdline()) or proc is me:
                    seen.update((proc.pid, c.laddr.ip) for c in proc.net_connections("inet") if c.status == "LISTEN")
            time.sleep(0.05)

    sampler = threading.Thread(target=sample)
    sampler.start()
    try:
        # When a 2-rank gloo call runs
        per_rank = distributed(report_listening_sockets, gpus=2, experiment="listen-loopback").distributed()
    finally:
        done.set()
        sampler.join()

    # Then neither the kernel nor the fork server listened at all (the stores are files), and gloo on loopback only
    assert seen == set()
    assert all(ips and set(ips) <= {"127.0.0.1"} for ips in per_rank), per_rank
