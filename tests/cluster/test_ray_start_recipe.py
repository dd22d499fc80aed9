"""The `ray start` recipe of the docs (how-to/ray-cluster.md, the block named ray-start-recipe), run as written:
a token, a head and a second node (two loopback addresses stand for two machines, each with its own home and Ray
folder). The cluster it makes is locked to another local user, reports no usage statistics, and jupyter_air joins
it with `auto`."""

from __future__ import annotations

import contextlib
import ipaddress
import os
import re
import shlex
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil
import pytest
from ray_cluster import CLUSTER_ENV, STARTED_HERE
from ray_nobody import answers, as_nobody

#: Two `ray start` runs, each tried up to 3 times when a loaded machine makes Ray give up on a node.
pytestmark = [pytest.mark.ray, pytest.mark.timeout(900)]

PAGE = Path(__file__).resolve().parents[2] / "docs" / "how-to" / "ray-cluster.md"
RECIPE = re.compile(r"```\{code-block\} bash\n:name: ray-start-recipe\n\n(.*?)\n```", re.S)
HEAD, NODE = "127.0.0.2", "127.0.0.3"
BIN = str(Path(sys.executable).parent)  # where `ray` is, first on every machine's PATH
JOIN = """
import ray
from jupyter_air.cluster.connect import connect
connect("auto")
print(sorted((n["NodeManagerAddress"], n["Resources"].get("GPU", 0)) for n in ray.nodes() if n["Alive"]))
"""


#: The recipe's steps, by a pattern of their command; each is run as the page writes it.
STEPS = {
    "token": r".*\bray get-auth-token\b",
    "export": r"export( \w+=\S+)+$",
    "ray-folder": r"mkdir .*\$RAY_TMPDIR",
    "head": r"ray start --head\b",
    "node": r"ray start --address=",
}


def recipe() -> dict[str, str]:
    """The recipe's commands by step: ``token``, ``export``, ``ray-folder``, ``head``, ``node``. A command this
    test does not know, or a step gone, fails: the test must learn what the page now says."""
    found = RECIPE.search(PAGE.read_text())
    assert found, f"{PAGE.name} has no code block named ray-start-recipe"
    steps: dict[str, str] = {}
    for line in found.group(1).splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        step = next((name for name, pattern in STEPS.items() if re.match(pattern, line)), None)
        assert step and step not in steps, f"a step of the recipe this test does not run: {line!r}"
        steps[step] = line
    assert steps.keys() == STEPS.keys(), f"steps missing from the recipe: {STEPS.keys() - steps.keys()}"
    return steps


def on(line: str, port: int) -> str:
    """A command of the recipe with this test's head address and GCS port (6379 may be taken on a shared machine)."""
    line = re.sub(r"\b6379\b", str(port), line.replace("<head-address>", HEAD))
    assert "<" not in line, f"a placeholder this test does not fill: {line!r}"
    return line


class Machine:
    """One machine of the recipe: its address and its home (where the token and, as the recipe says, Ray's folder
    live). Its processes carry a marker in their environment (what Ray renames or leaves behind is found by it)."""

    def __init__(self, address: str):
        self.address = address
        self.home = Path(tempfile.mkdtemp(prefix="air-rs-", dir="/tmp"))  # short: Ray's socket paths are below it
        STARTED_HERE.add(str(self.home))
        self.started: list[subprocess.Popen] = []
        self.exports: dict[str, str] = {}

    def env(self, **extra: str) -> dict[str, str]:
        """A login's environment (none of the test suite's Ray settings) with what the recipe exported."""
        env = {k: v for k, v in os.environ.items() if not k.startswith(("RAY_", "AIR_RAY"))}
        env |= {"HOME": str(self.home), "PATH": f"{BIN}:{env['PATH']}"}
        return env | {CLUSTER_ENV: str(self.home)} | self.exports | extra

    def export(self, line: str) -> None:
        """Keep what the recipe's ``export`` line sets, as this machine's shell expands it."""
        names = [item.split("=", 1)[0] for item in shlex.split(line)[1:]]
        shown = dict(item.split("=", 1) for item in self.run(f"{line} && env -0").stdout.split("\0") if "=" in item)
        self.exports |= {name: shown[name] for name in names}

    def run(self, command: str) -> subprocess.CompletedProcess:
        """A command of the recipe, in a shell."""
        done = subprocess.run(["sh", "-c", command], env=self.env(), capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, f"{command}: {done.stderr}"
        return done

    def start(self, command: str, *flags: str) -> str:
        """A `ray start` of the recipe, with this test's ``flags`` and ``--block``, until Ray says it started;
        returns what it printed. Started again (up to 3 tries) when Ray gave up on the node under load."""
        line = shlex.join(["exec", *shlex.split(command), *flags, "--block"])
        log = self.home / "ray-start.log"
        for tries_left in (2, 1, 0):
            with log.open("w") as out:
                proc = subprocess.Popen(["sh", "-c", line], env=self.env(), stdout=out, stderr=subprocess.STDOUT)
            self.started.append(proc)
            deadline = time.monotonic() + 240
            while "Ray runtime started" not in log.read_text() and proc.poll() is None:
                assert time.monotonic() < deadline, log.read_text()
                time.sleep(0.5)
            said = log.read_text()
            if "Ray runtime started" in said:
                return said
            self.kill()
            if not (tries_left and "timed out during startup" in said):
                break
        raise AssertionError(said)

    def processes(self) -> list[psutil.Process]:
        """This machine's processes still alive."""
        found = []
        for proc in psutil.process_iter():
            with contextlib.suppress(psutil.Error):
                if proc.environ().get(CLUSTER_ENV) == str(self.home) and proc.status() != psutil.STATUS_ZOMBIE:
                    found.append(proc)
        return found

    def kill(self) -> None:
        left = self.processes()
        for proc in left:
            with contextlib.suppress(psutil.Error):
                proc.kill()
        psutil.wait_procs(left, timeout=10)

    def stop(self) -> None:
        """As Ctrl-C on ``ray start --block`` does; whatever is left is killed."""
        for proc in self.started:
            with contextlib.suppress(ProcessLookupError):
                proc.send_signal(signal.SIGTERM)
        for proc in self.started:
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=30)
        self.kill()
        shutil.rmtree(self.home, ignore_errors=True)


@pytest.fixture
def machines():
    head, node = Machine(HEAD), Machine(NODE)
    yield head, node
    node.stop()
    head.stop()


def free_port(host: str) -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def test_the_documented_recipe_starts_a_locked_two_node_cluster_that_jupyter_air_joins(machines):
    head, node = machines
    port, dashboard, head_agent, node_agent = (free_port(HEAD) for _ in range(4))
    steps = recipe()

    # Given a token made on the head as the recipe says, copied to the other machine with its mode (scp -p)
    head.run(steps["token"])
    token = head.home / ".ray" / "auth_token"
    assert stat.S_IMODE(token.stat().st_mode) == 0o600 and re.fullmatch(r"[0-9a-f]{64}", token.read_text().strip())
    (node.home / ".ray").mkdir(mode=0o700)
    shutil.copy2(token, node.home / ".ray" / "auth_token")
    # and on both machines what it exports, and Ray's folder it makes
    for machine in (head, node):
        machine.export(steps["export"])
        machine.run(steps["ray-folder"])
        ray_folder = Path(machine.exports["RAY_TMPDIR"])
        assert ray_folder.is_relative_to(machine.home) and stat.S_IMODE(ray_folder.stat().st_mode) == 0o700

    # When the head and then the node start as written; the test adds each machine's address, a size, and free
    # ports where Ray's defaults could be taken by another cluster on this shared machine
    said = head.start(
        on(steps["head"], port),
        *(f"--node-ip-address={HEAD}", "--num-cpus=1", "--num-gpus=0", f"--ray-client-server-port={free_port(HEAD)}"),
        *(f"--dashboard-port={dashboard}", f"--dashboard-agent-listen-port={head_agent}"),
    )
    node.start(
        on(steps["node"], port),
        *(f"--node-ip-address={NODE}", "--num-cpus=1", "--num-gpus=2", f"--dashboard-agent-listen-port={node_agent}"),
    )

    # Then usage statistics are off
    assert "Usage stats collection is disabled" in said, said
    # and jupyter_air, on the head with the exports and the token, joins a cluster of both nodes with `auto`
    joined = subprocess.run([sys.executable, "-c", JOIN], env=head.env(), capture_output=True, text=True, timeout=180)
    assert joined.returncode == 0, joined.stderr
    assert joined.stdout.strip().splitlines()[-1] == str([(HEAD, 0), (NODE, 2.0)])
    # but not without the token
    tokenless = head.env(HOME=str(head.home / "elsewhere"))
    refused = subprocess.run([sys.executable, "-c", JOIN], env=tokenless, capture_output=True, text=True, timeout=180)
    assert refused.returncode != 0 and "requires Ray's token authentication" in refused.stderr, refused.stderr
    # and another local user can neither call the GCS nor submit a job (with the token, the same ports answer)
    secret = token.read_text().strip()
    job_server, agent = f"http://127.0.0.1:{dashboard}", f"http://{NODE}:{node_agent}"
    answers(f"{job_server}/api/version", {"authorization": f"Bearer {secret}"})
    answers(f"{agent}/api/healthz", {"authorization": f"Bearer {secret}"})
    assert as_nobody(f"{HEAD}:{port}", job_server, agent, secret) == {
        "gcs": "UNAUTHENTICATED",
        "named_actor": "UNAUTHENTICATED",
        "job_server": 401,
        "agent": 401,
        "gcs_with_token": "OK",
        "job_list_with_token": 200,
    }
    # and every connection of the cluster's processes stays on loopback (the test's two machines)
    remote = {
        c.raddr.ip
        for proc in head.processes() + node.processes()
        for c in _connections(proc)
        if c.raddr and not _loopback(c.raddr.ip)
    }
    assert remote == set()


def _connections(proc: psutil.Process) -> list:
    with contextlib.suppress(psutil.Error):
        return proc.net_connections("inet")
    return []


def _loopback(ip: str) -> bool:
    address = ipaddress.ip_address(ip)
    return (getattr(address, "ipv4_mapped", None) or address).is_loopback
