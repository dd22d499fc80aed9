"""First use in a fresh kernel: the first %%air_run, the first .distributed(), and the first run page.

Each scenario starts a new kernel (nbclient), runs the set-up cell, waits ``think`` seconds (0: the cells run
back to back, as in "Run all"; 5: a person reading the output), then times the first tracked cell. Against an
existing store, and separately a brand-new store (its one-time creation). The first run page is timed from the
moment a run exists to the MLflow UI page answering through the Jupyter server.

``AIR_BENCH_PYTHONPATH`` runs the kernels on another checkout (e.g. an older commit) to compare with it.
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

SETUPS = {
    "%%air_run": ("%load_ext jupyter_air", "%%air_run --experiment bench-first\nsum(range(10))"),
    ".distributed()": (
        "from jupyter_air import distributed\n\n@distributed(gpus=2, experiment='bench-first')\n"
        "def noop():\n    return 0",
        "noop.distributed()",
    ),
}


def _kernel_env(home: Path) -> dict[str, str]:
    code = os.environ.get("AIR_BENCH_PYTHONPATH", str(ROOT))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MLFLOW_", "JPY_"))}
    return {**env, "AIR_HOME": str(home), "PYTHONPATH": code, "JUPYTER_AIR_GPU_SOURCE": "none"}


def first_cell_seconds(home: Path, setup: str, cell: str, think: float) -> float:
    """Seconds the first tracked cell takes in a new kernel, ``think`` seconds after the set-up cell."""
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(setup), nbformat.v4.new_code_cell(cell)])
    home.mkdir(parents=True, exist_ok=True)
    client = NotebookClient(nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(home)}})
    with client.setup_kernel(env=_kernel_env(home)):
        client.execute_cell(nb.cells[0], 0)
        time.sleep(think)
        started = time.perf_counter()
        client.execute_cell(nb.cells[1], 1)
        return time.perf_counter() - started


def _existing_store(folder: Path) -> Path:
    home = folder / "existing"
    env = _kernel_env(home)
    subprocess.run(
        [sys.executable, "-c", "from jupyter_air.tracking.store import client; client()"], env=env, check=True
    )
    return home


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def first_run_page_seconds(home: Path) -> float:
    """Seconds from a run existing to its MLflow UI page answering through a Jupyter server started earlier."""
    port, token = _free_port(), "bench-first-use"
    env = _kernel_env(home)
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "jupyter_server",
            f"--port={port}",
            "--ip=127.0.0.1",
            "--ServerApp.port_retries=0",
            f"--IdentityProvider.token={token}",
            "--ServerApp.open_browser=False",
            "--ServerApp.allow_root=True",
            "--ServerApp.log_level=WARN",
        ],
        env=env,
        cwd=home,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        base = f"http://127.0.0.1:{port}/"
        _wait_for(lambda: _get(base + "jupyter-air/version", token), 60)
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
        )
        run_id = made.stdout.strip()
        started = time.perf_counter()
        _wait_for(lambda: _get(f"{base}mlflow/ajax-api/2.0/mlflow/runs/get?run_id={run_id}", token), 180)
        return time.perf_counter() - started
    finally:
        server.terminate()
        server.wait(30)


def _get(url: str, token: str) -> bool:
    request = urllib.request.Request(url, headers={"Authorization": f"token {token}"})
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status == 200
    except OSError:
        return False


def _wait_for(check, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while not check():
        if time.monotonic() > deadline:
            raise RuntimeError("timed out")
        time.sleep(0.1)


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="air-bench-first-") as tmp:
        folder = Path(tmp)
        existing = _existing_store(folder)
        for name, (setup, cell) in SETUPS.items():
            for think in (0.0, 5.0):
                times = [first_cell_seconds(existing, setup, cell, think) for _ in range(RUNS)]
                print(
                    f"first {name} in a fresh kernel, existing store, {think:.0f} s after its set-up cell: "
                    f"median {statistics.median(times):.2f} s of {RUNS} ({', '.join(f'{t:.2f}' for t in times)})"
                )
            new = [first_cell_seconds(folder / f"new-{name.strip('%.()')}-{k}", setup, cell, 0.0) for k in range(RUNS)]
            print(
                f"first {name} on a brand-new store (creates it), back to back: median {statistics.median(new):.2f} s"
            )
        page = [first_run_page_seconds(existing) for _ in range(RUNS)]
        print(
            f"first run page after the run exists, server started before: median {statistics.median(page):.2f} s "
            f"of {RUNS} ({', '.join(f'{t:.2f}' for t in page)})"
        )


if __name__ == "__main__":
    main()
