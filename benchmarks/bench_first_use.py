"""First use in a fresh kernel: the first %%air_run, the first .distributed(), and the first run page.

First the goals, each side by side with the code before its change (``baseline.py``; medians of 5), against a bare
``import mlflow`` in a fresh kernel, and which of mlflow and torch the kernel holds afterwards: ``%load_ext
jupyter_air`` and the first ``%%air_run`` back to back in a fresh kernel on an existing store (AIR_HOME's MLflow
server resident, as during a day of work), against the code before the REST tracking client; and a ``@distributed``
definition and its first no-op call on 2 CPU ranks back to back in a fresh kernel, after an earlier kernel made a
call on this AIR_HOME (its fork server zygote resident, as during a day of work), against the code before the zygote.

Then each scenario starts a new kernel (nbclient), runs the set-up cell, waits ``think`` seconds (0: the cells run
back to back, as in "Run all"; 5: a person reading the output), then times the first tracked cell. Against an
existing store, and separately a brand-new store (its one-time creation). The first run page is timed from the
moment a run exists to the MLflow UI page answering through the Jupyter server.

``AIR_BENCH_PYTHONPATH`` runs the scenarios' kernels on another checkout (e.g. an older commit) to compare with it.
"""

from __future__ import annotations

import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RUNS = 3
GOAL_RUNS = 5
HELD = "import sys\nprint(sorted(m for m in ('mlflow', 'torch') if m in sys.modules))"

SETUPS = {
    "%%air_run": ("%load_ext jupyter_air", "%%air_run --experiment bench-first\nsum(range(10))"),
    ".distributed()": (
        "from jupyter_air import distributed\n\n@distributed(gpus=2, experiment='bench-first')\n"
        "def noop():\n    return 0",
        "noop.distributed()",
    ),
}
#: Each goal: the cells timed back to back, the file whose change the baseline predates, and the most they may
#: take as a share of a bare `import mlflow` in a fresh kernel.
GOALS = {
    "%load_ext + first %%air_run": (list(SETUPS["%%air_run"]), "jupyter_air/tracking/rest.py", 0.3),
    "@distributed + first no-op .distributed() on 2 CPU ranks": (
        list(SETUPS[".distributed()"]),
        "jupyter_air/training/zygote_client.py",
        0.6,
    ),
}


def kernel_env(home: Path, code: Path | None = None) -> dict[str, str]:
    code = str(code) if code else os.environ.get("AIR_BENCH_PYTHONPATH", str(ROOT))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MLFLOW_", "JPY_"))}
    return {**env, "AIR_HOME": str(home), "PYTHONPATH": code, "JUPYTER_AIR_GPU_SOURCE": "none"}


def timed_cells(home: Path, cells: list[str], timed: int, code: Path | None = None) -> tuple[float, str]:
    """Seconds the first ``timed`` cells take, back to back, in a new kernel (started before the clock), and what
    the cell after them printed."""
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    client = NotebookClient(nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(home)}})
    with client.setup_kernel(env=kernel_env(home, code)):
        started = time.perf_counter()
        for index in range(timed):
            client.execute_cell(nb.cells[index], index)
        seconds = time.perf_counter() - started
        for index in range(timed, len(cells)):
            client.execute_cell(nb.cells[index], index)
    printed = "".join(o.get("text", "") for c in nb.cells[timed:] for o in c.outputs if o.output_type == "stream")
    return seconds, printed.strip()


def goals(folder: Path) -> None:
    """Each goal's cells, back to back in fresh kernels, side by side with its baseline, against `import mlflow`."""
    from benchmarks.baseline import baseline_checkout, start_resident_server, stop_resident_servers

    for index, (goal, (cells, added_file, ratio_goal)) in enumerate(GOALS.items()):
        with baseline_checkout(added_file) as (old_code, commit):
            code = {"baseline": old_code, "now": ROOT}
            homes = {name: existing_store(folder / f"{index}-{name}", code[name]) for name in code}
            start_resident_server(kernel_env(homes["now"]))
            try:
                for name in code:  # an earlier kernel's call: what stays resident after it is up (a day of work)
                    timed_cells(homes[name], cells, len(cells), code[name])
                figures: dict[str, list[float]] = {"import mlflow": [], "baseline": [], "now": []}
                held = {}
                for _ in range(GOAL_RUNS):  # interleaved, so both see the same load
                    figures["import mlflow"].append(timed_cells(homes["now"], ["import mlflow"], 1)[0])
                    for name in code:
                        seconds, held[name] = timed_cells(homes[name], [*cells, HELD], len(cells), code[name])
                        figures[name].append(seconds)
            finally:
                stop_resident_servers(folder)
        _report(goal, figures, held, commit, ratio_goal)


def _report(goal: str, figures: dict[str, list[float]], held: dict[str, str], commit: str, ratio_goal: float) -> None:
    bare = statistics.median(figures["import mlflow"])
    print(f"{goal}, back to back, fresh kernel, existing store (median of {GOAL_RUNS}):")
    print(f"  bare `import mlflow` in a fresh kernel: {bare:.2f} s ({listed(figures['import mlflow'])})")
    for name, label in (("baseline", f"baseline {commit}"), ("now", "now (AIR_HOME's resident processes up)")):
        median = statistics.median(figures[name])
        print(
            f"  {label}: {median:.2f} s = {median / bare:.2f}x import mlflow ({listed(figures[name])}); "
            f"the kernel then holds {held[name]}"
        )
    ratio = statistics.median(figures["now"]) / bare
    print(f"  goal <= {ratio_goal}x: {'met' if ratio <= ratio_goal else 'NOT met'} ({ratio:.2f}x)")


def listed(values: list[float]) -> str:
    return ", ".join(f"{v:.2f}" for v in values)


def first_cell_seconds(home: Path, setup: str, cell: str, think: float) -> float:
    """Seconds the first tracked cell takes in a new kernel, ``think`` seconds after the set-up cell."""
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(setup), nbformat.v4.new_code_cell(cell)])
    home.mkdir(parents=True, exist_ok=True)
    client = NotebookClient(nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(home)}})
    with client.setup_kernel(env=kernel_env(home)):
        client.execute_cell(nb.cells[0], 0)
        time.sleep(think)
        started = time.perf_counter()
        client.execute_cell(nb.cells[1], 1)
        return time.perf_counter() - started


def existing_store(folder: Path, code: Path | None = None) -> Path:
    home = folder / "existing"
    env = kernel_env(home, code)
    code = "from jupyter_air.tracking.store import client; client()"
    # From a neutral folder: `python -c` puts the working folder first on sys.path, before PYTHONPATH's checkout.
    subprocess.run([sys.executable, "-c", code], env=env, check=True, cwd=tempfile.gettempdir())
    return home


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(home: Path, env: dict[str, str], token: str, *options: str) -> tuple[subprocess.Popen, str]:
    """A quiet Jupyter server on a free loopback port in ``home`` with ``options``, once it answers; and its URL."""
    port = free_port()
    server = subprocess.Popen(
        [
            *(sys.executable, "-m", "jupyter_server", f"--port={port}", "--ip=127.0.0.1"),
            *("--ServerApp.port_retries=0", f"--IdentityProvider.token={token}", "--ServerApp.open_browser=False"),
            *("--ServerApp.allow_root=True", "--ServerApp.log_level=WARN", *options),
        ],
        env=env,
        cwd=home,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}/"
    try:
        wait_for(lambda: answers_ok(base + "jupyter-air/version", token), 120)
    except BaseException:
        server.kill()
        raise
    return server, base


def first_run_page_seconds(home: Path) -> float:
    """Seconds from a run existing to its MLflow UI page answering through a Jupyter server started earlier."""
    token, env = "bench-first-use", kernel_env(home)
    server, base = start_server(home, env, token)
    try:
        time.sleep(20)  # a person opens a notebook and starts training meanwhile
        made = subprocess.run(
            [
                sys.executable,
                "-c",
                "from jupyter_air.tracking.store import client, ensure_experiment; "
                "print(client().create_run(ensure_experiment('bench-first-page')).info.run_id)",
            ],
            env=env,
            capture_output=True,
            text=True,
            check=True,
            cwd=tempfile.gettempdir(),
        )
        run_id = made.stdout.strip()
        started = time.perf_counter()
        wait_for(lambda: answers_ok(f"{base}mlflow/ajax-api/2.0/mlflow/runs/get?run_id={run_id}", token), 180)
        return time.perf_counter() - started
    finally:
        server.terminate()
        server.wait(30)


def answers_ok(url: str, token: str) -> bool:
    request = urllib.request.Request(url, headers={"Authorization": f"token {token}"})
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status == 200
    except OSError:
        return False


def wait_for(check, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while not check():
        if time.monotonic() > deadline:
            raise RuntimeError("timed out")
        time.sleep(0.1)


def main() -> None:
    from benchmarks.baseline import stop_resident_servers

    with tempfile.TemporaryDirectory(prefix="air-bench-first-") as tmp:
        folder = Path(tmp)
        try:
            scenarios(folder)
        finally:
            stop_resident_servers(folder)


def scenarios(folder: Path) -> None:
    """The goals, then each first use of this checkout (or ``AIR_BENCH_PYTHONPATH``'s)."""
    from benchmarks.baseline import start_resident_server

    goals(folder / "goals")
    existing = existing_store(folder)
    start_resident_server(kernel_env(existing))  # as during a day of work (brand-new stores below start theirs)
    for name, (setup, cell) in SETUPS.items():
        for think in (0.0, 5.0):
            times = [first_cell_seconds(existing, setup, cell, think) for _ in range(RUNS)]
            print(
                f"first {name} in a fresh kernel, existing store, {think:.0f} s after its set-up cell: "
                f"median {statistics.median(times):.2f} s of {RUNS} ({', '.join(f'{t:.2f}' for t in times)})"
            )
        new = [first_cell_seconds(folder / f"new-{name.strip('%.()')}-{k}", setup, cell, 0.0) for k in range(RUNS)]
        print(f"first {name} on a brand-new store (creates it), back to back: median {statistics.median(new):.2f} s")
    page = [first_run_page_seconds(existing) for _ in range(RUNS)]
    print(
        f"first run page after the run exists, server started before: median {statistics.median(page):.2f} s "
        f"of {RUNS} ({', '.join(f'{t:.2f}' for t in page)})"
    )


if __name__ == "__main__":
    main()
