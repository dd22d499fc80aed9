"""`air run` to its command started, side by side with the code before the REST tracking client (``baseline.py``)
and against a bare `import mlflow` process; `air run` to RUNNING latency and `air logs --follow` lag, against a
fresh MLflow client and `tail -F`. On AIR_HOME's own store, its MLflow server resident (as during a day of work)."""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SUBMITS = 5
#: The goal: from `air run` to its command started, at most this share of a bare `import mlflow` process.
GOAL_RATIO = 0.5
LINES = 100
LINE_INTERVAL_SECONDS = 0.05
EMIT = (
    "import time\n"
    f"for i in range({LINES}):\n"
    "    print(time.time_ns() // 1000, flush=True)\n"
    f"    time.sleep({LINE_INTERVAL_SECONDS})\n"
)


def _p95(values: list[float]) -> float:
    return statistics.quantiles(values, n=20, method="inclusive")[-1] if len(values) > 1 else values[0]


def _air(env: dict, *args: str) -> str:
    cmd = [sys.executable, "-m", "jupyter_air.cli", *args]
    # From a neutral folder: `python -m` puts the working folder first on sys.path, before PYTHONPATH's checkout.
    done = subprocess.run(cmd, env=env, check=True, capture_output=True, text=True, cwd=tempfile.gettempdir())
    return done.stdout.strip()


def _workload(folder: Path, name: str, command: str) -> Path:
    path = folder / f"{name}.yaml"
    path.write_text(f"experiment_name: bench-workloads\ncommand: {command!r}\ncompute: {{num_accelerators: 0}}\n")
    return path


def _fresh_client_seconds(uri: str) -> float:
    """A new Python process that imports MLflow and reads the store: the least a supervisor must do."""
    code = f"from mlflow.tracking import MlflowClient; MlflowClient({uri!r}).search_experiments()"
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], check=True, capture_output=True)
    return time.perf_counter() - started


def _bare_import_seconds() -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", "import mlflow"], check=True)
    return time.perf_counter() - started


def _command_started_seconds(env: dict, store, folder: Path) -> tuple[float, float]:
    """Seconds from launching `air run` to it returning, and to its command's first instruction."""
    marker = folder / f"started-{time.time_ns()}"
    path = _workload(folder, "started", f"date +%s.%N > {marker}")
    launched = time.time()
    job_id = _air(env, "run", "-f", str(path))
    returned = time.time()
    while not marker.exists() or not marker.read_text().strip():
        time.sleep(0.005)
    while store.get(job_id).active:
        time.sleep(0.05)
    return returned - launched, float(marker.read_text()) - launched


def goals(folder: Path) -> None:
    from benchmarks.baseline import baseline_checkout, start_resident_server, stop_resident_servers
    from jupyter_air.workloads.state.store import JobStore

    with baseline_checkout() as (old_code, commit):
        envs, stores = {}, {}
        for name, code in (("baseline", old_code), ("now", REPO)):
            home = folder / name / "air"
            base = {k: v for k, v in os.environ.items() if not k.startswith("MLFLOW_")}
            envs[name] = {**base, "AIR_HOME": str(home), "PYTHONPATH": str(code)}
            stores[name] = JobStore(home)
            _command_started_seconds(envs[name], stores[name], folder / name)  # creates the store and experiment
        start_resident_server(envs["now"])
        try:
            bare, figures = [], {"baseline": [], "now": []}
            for _ in range(SUBMITS):  # interleaved, so both see the same load
                bare.append(_bare_import_seconds())
                for name in figures:
                    figures[name].append(_command_started_seconds(envs[name], stores[name], folder / name))
        finally:
            stop_resident_servers(folder)
    reference = statistics.median(bare)
    print(f"air run -> its command started, AIR_HOME's own store (median of {SUBMITS}):")
    print(f"  bare `import mlflow` process: {reference:.2f} s")
    for name, label in (("baseline", f"baseline {commit}"), ("now", "now (AIR_HOME's MLflow server resident)")):
        returned = statistics.median(r for r, _ in figures[name])
        started = statistics.median(s for _, s in figures[name])
        print(
            f"  {label}: air run returned after {returned:.2f} s, command started after {started:.2f} s "
            f"= {started / reference:.2f}x import mlflow"
        )
    ratio = statistics.median(s for _, s in figures["now"]) / reference
    print(f"  goal <= {GOAL_RATIO}x: {'met' if ratio <= GOAL_RATIO else 'NOT met'} ({ratio:.2f}x)")


def _time_to_running(env: dict, store, folder: Path, count: int = SUBMITS) -> list[float]:
    path = _workload(folder, "sleep", "sleep 0.5")
    latencies = []
    for _ in range(count):
        job_id = _air(env, "run", "-f", str(path))
        returned_ms = time.time() * 1000
        while (job := store.get(job_id)).started_ms is None and job.active:
            time.sleep(0.01)
        latencies.append((job.started_ms - returned_ms) / 1000)
        while store.get(job_id).active:
            time.sleep(0.05)
    return latencies


def _collect(proc: subprocess.Popen, lags: list[tuple[int, float]]) -> None:
    for line in proc.stdout:
        received_us = time.time_ns() // 1000
        text = line.strip()
        if text.isdigit():
            lags.append((int(text), (received_us - int(text)) / 1000))


def _follow_lag(env: dict, store, folder: Path) -> tuple[list[float], list[float]]:
    """Lags (ms) of lines emitted once both followers run; tail -F starts when the file exists (inotify)."""
    (folder / "emit.py").write_text(EMIT)
    job_id = _air(env, "run", "-f", str(_workload(folder, "emit", f"{sys.executable} emit.py")))
    air_lags: list[tuple[int, float]] = []
    tail_lags: list[tuple[int, float]] = []
    follow = subprocess.Popen(
        [sys.executable, "-m", "jupyter_air.cli", "logs", job_id, "--follow"],
        env=env,
        cwd=tempfile.gettempdir(),
        stdout=subprocess.PIPE,
        text=True,
    )
    output = store.job_dir(job_id) / "logs" / "attempt_0" / "node_0" / "output.log"
    while not output.exists():
        time.sleep(0.01)
    tail = subprocess.Popen(
        ["tail", "-F", "-n", "+1", str(output)], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
    )
    both_running_us = time.time_ns() // 1000 + 300_000
    readers = [threading.Thread(target=_collect, args=a) for a in ((follow, air_lags), (tail, tail_lags))]
    for reader in readers:
        reader.start()
    follow.wait(timeout=120)
    deadline = time.monotonic() + 5
    while len(tail_lags) < len(air_lags) and time.monotonic() < deadline:
        time.sleep(0.05)
    tail.terminate()
    for reader in readers:
        reader.join(10)
    return (
        [lag for emitted, lag in air_lags if emitted > both_running_us],
        [lag for emitted, lag in tail_lags if emitted > both_running_us],
    )


def main() -> None:
    from benchmarks.baseline import start_resident_server, stop_resident_servers
    from jupyter_air.workloads.state.store import JobStore

    with tempfile.TemporaryDirectory(prefix="bench-workloads-") as tmp:
        folder = Path(tmp)
        for name in ("baseline", "now"):
            (folder / name).mkdir()
        goals(folder)
        env = {
            **{k: v for k, v in os.environ.items() if not k.startswith("MLFLOW_")},
            "AIR_HOME": str(folder / "air"),
            "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),
        }
        store = JobStore(folder / "air")
        # A first job creates the MLflow tables, so the figures below are steady-state submissions.
        _time_to_running(env, store, folder, count=1)
        start_resident_server(env)
        try:
            uri = f"sqlite:///{folder / 'air' / 'mlflow.db'}"
            client_seconds = statistics.median(_fresh_client_seconds(uri) for _ in range(3))
            running = _time_to_running(env, store, folder)
            air_lags, tail_lags = _follow_lag(env, store, folder)
        finally:
            stop_resident_servers(folder)

    median_running = statistics.median(running)
    print(
        f"air run returned -> job RUNNING ({SUBMITS} submissions): median {median_running:.2f} s, "
        f"p95 {_p95(running):.2f} s, max {max(running):.2f} s"
    )
    print(
        f"  baseline: a fresh process importing MLflow and opening the same store {client_seconds:.2f} s; "
        f"ratio {median_running / client_seconds:.2f}x (the supervisor must create the run before starting)"
    )
    median_air, median_tail = statistics.median(air_lags), statistics.median(tail_lags)
    print(
        f"air logs --follow lag behind the workload's output ({len(air_lags)} lines): "
        f"median {median_air:.1f} ms, p95 {_p95(air_lags):.1f} ms"
    )
    print(
        f"  baseline: tail -F on the same log file ({len(tail_lags)} lines): median {median_tail:.1f} ms, "
        f"p95 {_p95(tail_lags):.1f} ms; ratio {median_air / median_tail:.2f}x"
    )


if __name__ == "__main__":
    main()
