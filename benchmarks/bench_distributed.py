"""Launch overhead of ``.distributed()`` for a no-op on 2 CPU ranks against bare ``elastic_launch`` and ``torchrun``."""

from __future__ import annotations

import contextlib
import io
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import threading
import time

RANKS = 2
REPEATS = 30
GOAL_RATIO = 1.15


def noop() -> None:
    """The function every launcher runs: nothing, so only the launch is measured."""


def _timings(actions: dict, repeats: int) -> dict[str, list[float]]:
    """Seconds of each run of each action, run in turn round after round so load changes hit all alike."""
    for action in actions.values():
        action()  # warm-up: starts the fork server, creates the MLflow database, fills caches
    times: dict[str, list[float]] = {label: [] for label in actions}
    for _ in range(repeats):
        for label, action in actions.items():
            started = time.perf_counter()
            action()
            times[label].append(time.perf_counter() - started)
    return times


def _bare_elastic(start_method: str, log_dir: pathlib.Path):
    from torch.distributed.launcher.api import elastic_launch

    from jupyter_air.training.launch_plan import launch_config

    return lambda: elastic_launch(launch_config(RANKS, log_dir, start_method), noop)()


def _in_thread(action):
    """Run ``action`` from a helper thread, as ``.distributed()`` runs the elastic agent."""

    def run():
        thread = threading.Thread(target=action)
        thread.start()
        thread.join()

    return run


def _torchrun(script: pathlib.Path):
    command = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        f"--nproc-per-node={RANKS}",
        "--rdzv-backend=c10d",
        "--rdzv-endpoint=localhost:0",
        "--max-restarts=0",
        str(script),
    ]
    return lambda: subprocess.run(command, check=True, capture_output=True)


def _air(log_system_metrics: bool):
    from jupyter_air import distributed

    wrapped = distributed(noop, gpus=RANKS, experiment="bench-distributed", log_system_metrics=log_system_metrics)

    def call():
        with contextlib.redirect_stdout(io.StringIO()):
            wrapped.distributed()

    return call


def main() -> None:
    from jupyter_air.training.launch_plan import START_METHOD

    with tempfile.TemporaryDirectory(prefix="air-bench-") as tmp:
        folder = pathlib.Path(tmp)
        os.environ["AIR_HOME"] = str(folder / "home")
        os.environ.pop("MLFLOW_TRACKING_URI", None)
        script = folder / "noop.py"
        script.write_text("")
        fast = _timings(
            {
                f"bare elastic_launch ({START_METHOD}, main thread)": _bare_elastic(START_METHOD, folder / "e1"),
                f"bare elastic_launch ({START_METHOD}, agent in a thread)": _in_thread(
                    _bare_elastic(START_METHOD, folder / "e3")
                ),
                ".distributed() (MLflow run, logs, system metrics)": _air(True),
                ".distributed(log_system_metrics=False)": _air(False),
            },
            REPEATS,
        )
        slow = _timings(
            {
                "bare elastic_launch (spawn, torch's default)": _bare_elastic("spawn", folder / "e2"),
                "torchrun command line": _torchrun(script),
            },
            3,
        )
    medians = {label: statistics.median(values) for label, values in {**fast, **slow}.items()}
    bare_labels = list(fast)[:2]
    baseline_label = min(bare_labels, key=medians.get)
    baseline = medians[baseline_label]
    print(f"No-op on {RANKS} CPU ranks, {REPEATS} warm runs of each taken in turn (3 for the slow ones).")
    print(f"Baseline: the faster bare elastic_launch, {baseline_label!r}.")
    print(f"  {'':<52} {'median':>8} {'p25-p75':>13}  ratio")
    for label, seconds in medians.items():
        q1, _, q3 = statistics.quantiles([v * 1000 for v in {**fast, **slow}[label]], n=4)
        print(f"  {label:<52} {seconds * 1000:6.0f} ms {q1:5.0f}-{q3:<5.0f}ms  {seconds / baseline:5.2f}x")
    ours = fast[".distributed() (MLflow run, logs, system metrics)"]
    ratio = medians[".distributed() (MLflow run, logs, system metrics)"] / baseline
    paired = statistics.median(a / b for a, b in zip(ours, fast[baseline_label], strict=True))
    verdict = "meets" if ratio <= GOAL_RATIO else "misses"
    print(
        f".distributed() / bare elastic_launch: {ratio:.2f}x of medians, {paired:.2f}x median of paired rounds"
        f" ({verdict} the {GOAL_RATIO}x goal)"
    )
    print(
        f"Start method: {START_METHOD}. Ranks fork from a fresh server process that imported torch but never"
        " initialised CUDA, so no rank inherits the kernel's CUDA context, threads or locks (the danger of"
        " plain fork), while after the first call a rank starts without re-importing torch (spawn's cost)."
    )


if __name__ == "__main__":
    main()
