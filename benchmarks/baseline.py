"""The code before a change (by default the REST tracking client), checked out beside this one, to measure both side
by side in one run; and AIR_HOME's resident MLflow server, up before the figures of now (as during a day of work)."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
#: A commit to compare with (default: the one before the change that added the file a benchmark names).
BASELINE_ENV = "AIR_BENCH_BASELINE"
#: The REST tracking client, whose change most first-use benchmarks compare with.
REST_CLIENT = "jupyter_air/tracking/rest.py"


def _git(*args: str) -> str:
    return subprocess.run(["git", *args], cwd=ROOT, check=True, capture_output=True, text=True).stdout.strip()


def baseline_commit(added_file: str = REST_CLIENT) -> str:
    """``$AIR_BENCH_BASELINE``, or the commit before ``added_file`` was added (HEAD while it is not committed)."""
    chosen = os.environ.get(BASELINE_ENV)
    if chosen:
        return _git("rev-parse", chosen)
    added = _git("log", "--diff-filter=A", "--format=%H", "--", added_file).split()
    return _git("rev-parse", f"{added[-1]}^" if added else "HEAD")


@contextlib.contextmanager
def baseline_checkout(added_file: str = REST_CLIENT) -> Iterator[tuple[Path, str]]:
    """A temporary ``git worktree`` of :func:`baseline_commit`: its folder (for PYTHONPATH) and short commit."""
    commit = baseline_commit(added_file)
    with tempfile.TemporaryDirectory(prefix="air-bench-baseline-") as tmp:
        folder = Path(tmp) / "checkout"
        _git("worktree", "add", "--detach", str(folder), commit)
        try:
            yield folder, commit[:10]
        finally:
            _git("worktree", "remove", "--force", str(folder))


def start_resident_server(env: dict[str, str]) -> None:
    """Start the MLflow server of ``env``'s AIR_HOME (this checkout's code) and wait until it answers."""
    code = (
        "import time\nfrom jupyter_air.tracking import resident, store\n"
        "server = resident.ensure(store.tracking_uri())\n"
        "while not server.answers():\n    assert server.alive(), 'the MLflow server exited'\n    time.sleep(0.2)"
    )
    env = {**env, "PYTHONPATH": str(ROOT)}
    subprocess.run([sys.executable, "-c", code], env=env, check=True, timeout=600, cwd=tempfile.gettempdir())


def stop_resident_servers(folder: Path) -> None:
    """Stop the MLflow servers and fork server zygotes of the AIR_HOMEs under ``folder``."""
    from jupyter_air.tracking import resident
    from jupyter_air.training import zygote_client

    for record in folder.rglob("mlflow-server*.json"):
        resident.stop(record)
    for lock in folder.rglob("forks-*.pid"):
        zygote_client.stop(lock)
