"""Run every ``benchmarks/bench_*.py`` module's ``main()`` (or only those named on the command line)."""

from __future__ import annotations

import importlib
import os
import pkgutil
import sys
import time
from pathlib import Path


def main(argv: list[str]) -> int:
    os.environ["MLFLOW_DISABLE_TELEMETRY"] = "true"  # traffic to loopback only, in every process a benchmark starts
    names = sorted(m.name for m in pkgutil.iter_modules([str(Path(__file__).parent)]) if m.name.startswith("bench_"))
    chosen = [n for n in names if not argv or n in argv or n.removeprefix("bench_") in argv]
    if not chosen:
        print(f"No benchmark matches {argv}; available: {', '.join(names)}", file=sys.stderr)
        return 2
    for name in chosen:
        print(f"\n=== {name} ===", flush=True)
        started = time.perf_counter()
        importlib.import_module(f"benchmarks.{name}").main()
        print(f"({name} took {time.perf_counter() - started:.1f} s)", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
