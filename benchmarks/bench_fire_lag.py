"""How late a scheduled fire starts its job: the lag from the due time to the fire being claimed and to its job
existing (p50/p99 over 30 fires), for each driver: `air scheduler` (sleeps until the next due time) and a Jupyter
server's job check at its default interval (the baseline: a fixed-period poll). Three schedules every 10 s, a
few seconds apart, give 30 fires in about 100 s per driver; their jobs run `python -c pass`."""

from __future__ import annotations

import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

FIRES = 30
SCHEDULES = 3
REPO = Path(__file__).resolve().parents[1]


def _env(home: Path) -> dict[str, str]:
    return {
        **os.environ,
        "AIR_HOME": str(home),
        "MLFLOW_TRACKING_URI": f"sqlite:///{home / 'bench.db'}",
        "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),
    }


def _schedule(home: Path, folder: Path) -> None:
    for i in range(SCHEDULES):
        path = folder / f"lag-{i}.yaml"
        path.write_text(
            f"experiment_name: fire-lag-{i}\ncommand: python -c pass\ncompute: {{num_accelerators: 0}}\n"
            f"schedule: {{quartz_cron_expression: '{i * 3}/10 * * * * ?', timezone_id: UTC, catchup: none}}\n"
        )
        subprocess.run([sys.executable, "-m", "jupyter_air.cli", "run", "-f", str(path)], env=_env(home), check=True)


def _driver(kind: str, home: Path, folder: Path) -> subprocess.Popen:
    if kind == "air scheduler":
        command = [sys.executable, "-m", "jupyter_air.cli", "scheduler"]
    else:
        sock = folder / "jupyter.sock"
        command = [sys.executable, "-m", "jupyter_server", "--no-browser", "--allow-root", f"--ServerApp.sock={sock}"]
        command += ["--JupyterAir.gpu_source=none", "--JupyterAir.mlflow_ui_autostart=False"]
    return subprocess.Popen(command, env=_env(home), cwd=folder, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def _lags(home: Path) -> tuple[list[int], list[int]]:
    """Per fire: due → claimed, due → its job row written (ms)."""
    os.environ["AIR_HOME"] = str(home)
    from jupyter_air.workloads.jobs.jobs import Jobs
    from jupyter_air.workloads.schedules.schedules import Schedules

    jobs = Jobs(home)
    fires = [f for s in Schedules(jobs).list(fires=FIRES) for f in s.fires if f.outcome == "SUBMITTED"]
    fires = sorted(fires, key=lambda f: f.scheduled_ms)[:FIRES]
    claimed = [f.fired_ms - f.scheduled_ms for f in fires]
    submitted = [jobs.get(f.job_run_id).submitted_ms - f.scheduled_ms for f in fires]
    return claimed, submitted


def _measure(kind: str) -> tuple[list[int], list[int]]:
    from jupyter_air.tracking import resident

    with tempfile.TemporaryDirectory() as tmp:
        folder, home = Path(tmp), Path(tmp) / "air"
        _schedule(home, folder)
        driver = _driver(kind, home, folder)
        try:
            claimed: list[int] = []
            deadline = time.monotonic() + FIRES * 10 / SCHEDULES + 120
            while len(claimed) < FIRES and time.monotonic() < deadline:
                time.sleep(5)
                claimed = _lags(home)[0]
        finally:
            driver.send_signal(signal.SIGTERM)
            driver.wait(60)
        subprocess.run(
            [sys.executable, "-m", "jupyter_air.cli", "cancel", "--all"],
            env=_env(home),
            capture_output=True,
            check=False,
        )
        result = _lags(home)
        for record in home.glob("mlflow-server*.json"):
            resident.stop(record)
        return result


def _p(values: list[int]) -> str:
    ordered = sorted(values)
    p99 = ordered[min(len(ordered) - 1, round(0.99 * (len(ordered) - 1)))]
    return f"p50 {statistics.median(values):.0f} ms, p99 {p99:.0f} ms"


def main() -> None:
    saved = os.environ.get("AIR_HOME")
    try:
        for kind in ("air scheduler", "Jupyter server (job check every 5 s)"):
            claimed, submitted = _measure(kind)
            print(f"{kind}: {len(claimed)} fires; due -> claimed {_p(claimed)}; due -> job exists {_p(submitted)}")
    finally:
        if saved is None:
            os.environ.pop("AIR_HOME", None)
        else:
            os.environ["AIR_HOME"] = saved
