"""GPU panel charts: time to update 8 GPUs x 720 samples in Chromium, against a one-frame budget."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RUNNER = ROOT / "benchmarks" / "ui" / "run.mjs"
GOAL_MS = 16.0  # about one frame at 60 Hz: the goal for one poll's render
GPUS, SAMPLES, UPDATES = 8, 720, 20


def _check_prerequisites() -> str | None:
    """Why the benchmark cannot run here, or None."""
    if shutil.which("node") is None:
        return "node is not on PATH"
    if not (ROOT / "ui-tests" / "node_modules" / "@playwright" / "test").is_dir():
        return "Playwright is missing: run `cd ui-tests && jlpm install` (PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1)"
    chromium = os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium")
    if not Path(chromium).exists():
        return f"Chromium not found at {chromium}: install Debian's chromium or set CHROMIUM_PATH"
    return None


def run_in_browser() -> dict:
    """Compile the charts module (incremental) and time the updates in Chromium."""
    subprocess.run(["jlpm", "build:lib"], cwd=ROOT, check=True, capture_output=True)
    query = f"?gpus={GPUS}&samples={SAMPLES}&updates={UPDATES}"
    done = subprocess.run(
        ["node", str(RUNNER), query], cwd=ROOT, check=True, capture_output=True, text=True, timeout=300
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    problem = _check_prerequisites()
    if problem:
        print(f"bench_ui skipped: {problem}")
        return
    result = run_in_browser()
    if "error" in result:
        raise RuntimeError(f"The chart benchmark failed in the browser: {result['error']}")
    update = result["update_in_place"]
    baseline = result["baseline_recreate"]
    print(
        f"Chart update, {result['gpus']} GPUs x {result['samples']} samples, 3 uPlot charts "
        f"(median of {update['runs']} polls, performance.now() in Chromium):"
    )
    print(
        f"  update_in_place_median_ms   {update['median_ms']:7.2f}  (min {update['min_ms']:.2f}, "
        f"max {update['max_ms']:.2f})"
    )
    print(
        f"  goal_ms                     {GOAL_MS:7.2f}  -> median is {update['median_ms'] / GOAL_MS:.2f} of the goal "
        f"({'meets' if update['median_ms'] < GOAL_MS else 'MISSES'} it)"
    )
    print(
        f"  baseline: recreate_charts_median_ms {baseline['median_ms']:7.2f}  -> in-place update is "
        f"{baseline['median_ms'] / max(update['median_ms'], 1e-9):.1f}x faster"
    )
    print(f"  browser: {result['user_agent']}")


if __name__ == "__main__":
    main()
