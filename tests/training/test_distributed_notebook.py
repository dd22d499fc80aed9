"""A real notebook, run by a real kernel (nbclient), using %%air_distributed, %%air_run and %air_gpu."""

from __future__ import annotations

import os
import pathlib
import signal
import threading
import time

import nbformat
import pytest
from nbclient import NotebookClient
from notebook_helpers import outputs_text

REPO_ROOT = pathlib.Path(__file__).resolve().parents[2]
HOSTILE = "<script>alert(1)</script>"

CELLS = [
    "%load_ext jupyter_air",
    "lr = 0.5\nunused = object()",
    f'%%air_distributed --gpus 2 --experiment "{HOSTILE}" --run-name "r<b>1"\n'
    "import os, threading\n"
    "import torch.distributed as dist\n"
    'dist.init_process_group("gloo")\n'
    'rank = int(os.environ["RANK"])\n'
    'print("hello from", rank, "lr", lr)\n'
    "scaled = lr * 2\n"
    "def double(x):\n    return 2 * x\n"
    "from math import sqrt\n"
    "lock = threading.Lock()\n"
    "dist.barrier()  # no rank leaves while the other still sets the group up\n"
    "dist.destroy_process_group()",
    "print(scaled, rank)",
    "%%air_run --experiment nb-tracked --run-name ok\nimport mlflow\nmlflow.log_metric('accuracy_ratio', 0.9)\n6 * 7",
    "%%air_run --experiment nb-tracked --run-name broken --no-system-metrics\nraise RuntimeError('cell failed')",
    "%air_gpu",
]


@pytest.fixture
def notebook_env(store, monkeypatch, tmp_path):
    """What a kernel started by Jupyter for `work/demo.ipynb` would see (and this checkout importable)."""
    monkeypatch.setenv("JPY_SESSION_NAME", "work/demo.ipynb")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(REPO_ROOT), os.environ.get("PYTHONPATH")])))
    return tmp_path


@pytest.mark.usefixtures("no_orphans")
def test_notebook_with_both_magics(notebook_env, store, runs_of):
    # Given a notebook that uses both magics and %air_gpu
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(src) for src in CELLS])
    nb.cells[5].metadata["tags"] = ["raises-exception"]
    client = NotebookClient(nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(notebook_env)}})

    # When a real kernel runs it, and then runs a hung distributed cell that the user interrupts
    with client.setup_kernel():
        for index, cell in enumerate(nb.cells):
            client.execute_cell(cell, index)
        interrupted = _run_and_interrupt(client, nb, notebook_env)
        again = nbformat.v4.new_code_cell("%%air_distributed --gpus 2 --experiment nb-after\nafter = 1")
        nb.cells.append(again)
        client.execute_cell(again, len(nb.cells) - 1)

    distributed_out, printed_out = outputs_text(nb.cells[2]), outputs_text(nb.cells[3])
    # Then the distributed cell showed its run with escaped names, finished, and every rank's lines
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in distributed_out and HOSTILE not in distributed_out
    assert "r&lt;b&gt;1" in distributed_out and "finished" in distributed_out
    assert "[rank 0] hello from 0 lr 0.5" in distributed_out and "[rank 1] hello from 1 lr 0.5" in distributed_out
    # And the values rank 0 created came back (a function it defined too), never what it imported (modules,
    # functions or classes); the unpicklable one is listed, not silently lost
    assert "Returned from rank 0: double, rank, scaled" in distributed_out
    assert "Not returned (cannot be pickled; they stayed on the workers): lock (lock)" in distributed_out
    assert printed_out.strip() == "1.0 0"
    # And the run is recorded under the hostile name, tagged as coming from the magic in this notebook
    (run,) = runs_of(HOSTILE)
    assert run.info.status == "FINISHED" and run.info.run_name == "r<b>1"
    assert run.data.tags["air.source"] == "distributed" and run.data.tags["air.notebook_path"] == "work/demo.ipynb"
    assert run.data.params == {"lr": "0.5"}
    # And %%air_run recorded the cell's own metric, and a raising cell FAILED while its error still showed
    broken, ok = runs_of("nb-tracked")
    assert (ok.info.run_name, ok.info.status, ok.data.metrics["accuracy_ratio"]) == ("ok", "FINISHED", 0.9)
    assert "system/cpu_utilization_percentage" in ok.data.metrics
    assert nb.cells[4].outputs[-1]["data"]["text/plain"] == "42"  # the cell's last value is still shown
    assert (broken.info.run_name, broken.info.status) == ("broken", "FAILED")
    assert broken.data.tags["air.error"] == "RuntimeError: cell failed"
    assert "RuntimeError: cell failed" in outputs_text(nb.cells[5])
    # And %air_gpu says plainly that this node has no GPU
    assert outputs_text(nb.cells[6]).startswith("No GPU on this node:")
    # And the interrupt raised a KeyboardInterrupt within 10 s that says what happened, with the run KILLED
    assert interrupted["ename"] == "CallInterrupted"  # a KeyboardInterrupt
    assert "KeyboardInterrupt: the call was interrupted: every worker was stopped" in interrupted["traceback"]
    assert "jupyter_air/training" not in interrupted["traceback"]
    assert interrupted["seconds"] < 10
    (killed,) = runs_of("nb-interrupt")
    assert killed.info.status == "KILLED"
    # And the kernel launches again afterwards
    assert "Returned from rank 0: after" in outputs_text(again)


def _run_and_interrupt(client, nb, folder) -> dict:
    """Run a hung distributed cell and interrupt the kernel as Jupyter does (SIGINT to its process group)."""
    marker = folder / "started"
    code = (
        "%%air_distributed --gpus 2 --experiment nb-interrupt\n"
        "import os, pathlib, time\n"
        f"pathlib.Path({str(marker)!r} + os.environ['RANK']).touch()\n"
        "time.sleep(600)"
    )
    cell = nbformat.v4.new_code_cell(code, metadata={"tags": ["raises-exception"]})
    nb.cells.append(cell)
    result: dict = {}

    def interrupt_when_started():
        deadline = time.monotonic() + 60
        while not all((folder / f"started{rank}").exists() for rank in (0, 1)) and time.monotonic() < deadline:
            time.sleep(0.1)
        result["sent"] = time.monotonic()
        os.killpg(os.getpgid(client.km.provisioner.process.pid), signal.SIGINT)

    watcher = threading.Thread(target=interrupt_when_started)
    watcher.start()
    client.execute_cell(cell, len(nb.cells) - 1)
    result["seconds"] = time.monotonic() - result["sent"]
    watcher.join()
    error = next(o for o in cell.outputs if o.output_type == "error")
    result["ename"], result["traceback"] = error.ename, "\n".join(error.traceback)
    return result
