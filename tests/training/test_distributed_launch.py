"""`.distributed()` on 2 gloo ranks on CPU: results, DDP, the MLflow run it records, its logs and metrics."""

from __future__ import annotations

import os
import pathlib
import signal
import subprocess
import sys

import pytest

from jupyter_air import DistributedError, distributed

pytestmark = pytest.mark.usefixtures("no_orphans")


def ddp_step(lr, scale=1.0):
    """One DDP step on a tiny model; each rank sees different data, so only all-reduce makes grads agree."""
    import mlflow
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel

    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = DistributedDataParallel(torch.nn.Linear(2, 1, bias=False))
    inputs = torch.full((1, 2), float(rank + 1) * scale)
    model(inputs).sum().backward()
    grad = model.module.weight.grad.tolist()
    print(f"rank {rank} of {dist.get_world_size()} grad {grad}", flush=True)
    print(f"stderr line from rank {rank}", file=__import__("sys").stderr, flush=True)
    if rank == 0:
        with mlflow.start_run(run_id=os.environ["MLFLOW_RUN_ID"]):  # the documented worker pattern
            mlflow.log_metric("train_loss", 0.25)
    dist.destroy_process_group()
    sigterm = signal.getsignal(signal.SIGTERM)
    return {"rank": rank, "local_rank": int(os.environ["LOCAL_RANK"]), "grad": grad, "lr": lr, "sigterm": str(sigterm)}


def test_results_by_rank_with_ddp_and_a_complete_run(store, runs_of, artifact_text, capsys, fake_nvml):
    # Given a decorated function using DDP, an explicit experiment, and a (fake) GPU for the node's metrics
    train = distributed(ddp_step, gpus=2, experiment="launch-ddp", run_name="ddp-run")

    # When it runs on 2 CPU ranks
    results = train.distributed(0.5, scale=2.0)

    # Then results come back by global rank and DDP averaged the gradients across ranks
    assert [r["rank"] for r in results] == [0, 1]
    assert [r["local_rank"] for r in results] == [0, 1]
    assert results[0]["grad"] == results[1]["grad"] == [[3.0, 3.0]]  # mean of inputs 2 and 4
    assert results[1]["lr"] == 0.5
    # And a rank ends on SIGTERM as a script does: no handler of the launcher's is left in it
    assert [r["sigterm"] for r in results] == [str(signal.SIG_DFL)] * 2
    # And every rank's output reached the cell live, prefixed by its rank
    out = capsys.readouterr().out
    assert "[rank 0] rank 0 of 2 grad [[3.0, 3.0]]" in out
    assert "[rank 1] stderr line from rank 1" in out
    # And outside a kernel the run card is text, ending with the status and the run's own metrics
    assert "in experiment 'launch-ddp': finished after" in out and "  train_loss = 0.25 (step 0)" in out
    # And the call is one FINISHED run (the launcher's word, though rank 0's `with` block also ended it)
    (run,) = runs_of("launch-ddp")
    assert run.info.status == "FINISHED"
    assert run.info.run_name == "ddp-run"
    assert run.data.params == {"lr": "0.5", "scale": "2.0"}
    assert run.data.metrics["train_loss"] == 0.25
    tags = run.data.tags
    assert (tags["air.source"], tags["air.function"], tags["air.world_size"], tags["air.gpus"]) == (
        "distributed",
        "ddp_step",
        "2",
        "0",
    )
    # And system metrics use MLflow's names, GPU temperature included, from one sampler for the node
    for key in (
        "system/cpu_utilization_percentage",
        "system/system_memory_usage_megabytes",
        "system/gpu_0_utilization_percentage",
        "system/gpu_1_temperature_celsius",
    ):
        assert key in run.data.metrics, key
    assert run.data.metrics["system/gpu_1_temperature_celsius"] == 71
    # And each rank's complete log is an artifact
    for rank in (0, 1):
        log = artifact_text(run.info.run_id, f"logs/node_0/rank_{rank}.log")
        assert f"rank {rank} of 2 grad" in log and f"stderr line from rank {rank}" in log


def test_a_plain_call_still_runs_locally(store, runs_of):
    # Given a decorated function
    @distributed(gpus=2, experiment="launch-local")
    def add(a, b):
        return a + b

    # When it is called plainly, Then it runs here and records nothing
    assert add(2, 3) == 5
    assert store.get_experiment_by_name("launch-local") is None


def test_bad_input_is_refused_before_any_run_exists(store):
    # Given a function whose argument cannot travel to another process
    import threading

    @distributed(gpus=2, experiment="launch-bad-input")
    def uses(lock):
        return lock

    # When it is launched, Then the error says which argument and what to do, and no experiment or run was created
    with pytest.raises(DistributedError, match=r"cannot send argument 0 \(a _thread.lock\) to the workers.*picklable"):
        uses.distributed(threading.Lock())
    assert store.get_experiment_by_name("launch-bad-input") is None
    # And a notebook function reading an unpicklable global is refused naming that global
    cell = "import threading\nlock = threading.Lock()\n\ndef guarded(x):\n    with lock:\n        return x\n"
    namespace = {"__name__": "__main__"}
    exec(compile(cell, "<ipython-input-3-beef>", "exec"), namespace)
    with pytest.raises(DistributedError, match=r"cannot send the global 'lock' that guarded uses \(a _thread.lock\)"):
        distributed(namespace["guarded"], gpus=2, experiment="launch-bad-input").distributed(1)
    assert store.get_experiment_by_name("launch-bad-input") is None
    # And an impossible GPU count is refused with its reason
    with pytest.raises(ValueError, match="gpus must be a positive whole number"):
        distributed(lambda: None, gpus=0).distributed()


def test_without_torch_it_says_how_to_install(store, monkeypatch):
    # Given a kernel without PyTorch
    import sys

    monkeypatch.setitem(sys.modules, "torch", None)

    # When .distributed() is called, Then it explains the install command
    with pytest.raises(DistributedError, match=r"pip install 'jupyter-air\[distributed\]'"):
        distributed(lambda: None, gpus=2).distributed()


def test_the_decorator_works_bare_and_with_options_whatever_was_imported_first():
    # Given the training submodules imported before the name
    import jupyter_air.training.node_call  # noqa: F401
    from jupyter_air import distributed as decorator

    # When it decorates bare and with options, Then both give a function that still runs locally
    @decorator
    def bare(x):
        return x + 1

    @decorator(gpus=2, timeout=5)
    def configured(x):
        return x * 2

    assert (bare(1), configured(2)) == (2, 4)
    assert bare.__name__ == "bare" and callable(configured.distributed)


GUARDLESS = """
from jupyter_air import distributed
print("top level ran", flush=True)

@distributed(gpus=2, experiment="launch-script")
def rank_times(x):
    import os
    return int(os.environ["RANK"]) * x

print("results", rank_times.distributed(3), flush=True)
"""


def test_a_script_without_a_main_guard_runs_its_top_level_once(store, tmp_path):
    # Given a plain script that calls .distributed() at its top level, with no `if __name__ == "__main__":`
    script = tmp_path / "train.py"
    script.write_text(GUARDLESS)

    # When it runs
    done = subprocess.run(
        [sys.executable, str(script)],
        capture_output=True,
        text=True,
        timeout=180,
        env={**os.environ, "PYTHONPATH": str(pathlib.Path(__file__).resolve().parents[2])},
    )

    # Then it succeeds, and neither the ranks nor the fork server ran its top level again
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("top level ran") == 1, done.stdout
    assert "results [0, 3]" in done.stdout


BROKEN_TORCH = """
from jupyter_air import DistributedError
from jupyter_air import distributed

try:
    distributed(lambda: None, gpus=2).distributed()
except DistributedError as exc:
    print("refused:", exc)
"""


def test_a_fork_server_that_cannot_import_torch_says_how_to_install(store, tmp_path):
    # Given an environment whose torch cannot be imported (a broken install shadows the real one)
    broken = tmp_path / "site" / "torch"
    broken.mkdir(parents=True)
    (broken / "__init__.py").write_text("raise ImportError('libtorch_cpu.so: cannot open shared object file')\n")
    script = tmp_path / "call.py"
    script.write_text(BROKEN_TORCH)
    path = os.pathsep.join([str(broken.parent), str(pathlib.Path(__file__).resolve().parents[2])])

    # When a call is made
    done = subprocess.run(
        [sys.executable, str(script)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": path},
    )

    # Then the fork server's import error and the install command are said, and nothing else is left running
    assert done.returncode == 0, done.stderr
    assert "refused: the fork server could not import PyTorch: ImportError: libtorch_cpu.so" in done.stdout
    assert "pip install 'jupyter-air[distributed]'" in done.stdout
