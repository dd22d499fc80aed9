"""A no-op ``.distributed(remote=True)`` on one machine (2 CPU ranks, a job that outlives its kernel) against the same
call driven by the kernel, in a real kernel with AIR_HOME's resident processes up (as during a day of work), side by
side with the code before the warm supervisor (``baseline.py``).

Each kernel warms up with one call of each, then makes them in turn, local then remote, ``ROUNDS`` times, so load
from elsewhere hits both alike. Goals: the remote call at most ``GOAL_RATIO`` times the kernel-driven one and at most
``GOAL_SECONDS`` (medians).
"""

from __future__ import annotations

import json
import statistics
import tempfile
from pathlib import Path

from benchmarks.baseline import baseline_checkout, start_resident_server, stop_resident_servers
from benchmarks.bench_first_use import ROOT, existing_store, kernel_env, listed, timed_cells

ROUNDS = 5
GOAL_RATIO, GOAL_SECONDS = 3.0, 1.0
CELLS = [
    "from jupyter_air import distributed\n\n@distributed(gpus=2, experiment='bench-remote')\ndef noop():\n    return 0",
    "assert noop.distributed() == noop.distributed(remote=True) == [0, 0]",
    "import json, time\n"
    "timed = {'local': [], 'remote': []}\n"
    f"for _ in range({ROUNDS}):\n"
    "    for name in timed:\n"
    "        started = time.perf_counter()\n"
    "        assert noop.distributed(remote=name == 'remote') == [0, 0]\n"
    "        timed[name].append(time.perf_counter() - started)\n"
    "print(json.dumps(timed))",
]


def figures(folder: Path, code: Path) -> dict[str, list[float]]:
    """The seconds of each round's local and remote call, in one new kernel running ``code``."""
    home = existing_store(folder, code)
    start_resident_server(kernel_env(home))
    _, printed = timed_cells(home, CELLS, 0, code)
    return json.loads(printed.splitlines()[-1])


def main() -> None:
    with (
        tempfile.TemporaryDirectory(prefix="air-bench-remote-") as tmp,
        baseline_checkout("benchmarks/bench_remote_call.py") as (old_code, commit),
    ):
        try:
            runs = {"baseline": figures(Path(tmp) / "baseline", old_code), "now": figures(Path(tmp) / "now", ROOT)}
        finally:
            stop_resident_servers(Path(tmp))
    print(f"no-op call on 2 CPU ranks, one machine, in a kernel (medians of {ROUNDS}):")
    for name, label in (("baseline", f"baseline {commit}"), ("now", "now")):
        local, remote = (statistics.median(runs[name][k]) for k in ("local", "remote"))
        print(
            f"  {label}: driven by the kernel {local:.2f} s ({listed(runs[name]['local'])}); "
            f"remote=True {remote:.2f} s ({listed(runs[name]['remote'])}) = {remote / local:.1f}x"
        )
    local, remote = (statistics.median(runs["now"][k]) for k in ("local", "remote"))
    met = remote / local <= GOAL_RATIO and remote <= GOAL_SECONDS
    print(f"  goal <= {GOAL_RATIO:g}x and <= {GOAL_SECONDS:g} s: {'met' if met else 'NOT met'}")
