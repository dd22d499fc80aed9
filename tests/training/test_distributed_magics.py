"""The magics on an in-process IPython shell: registration, real help text, %air_gpu, unloading."""

from __future__ import annotations

import pytest
from IPython.core.interactiveshell import InteractiveShell


@pytest.fixture
def shell():
    ip = InteractiveShell.instance()
    ip.run_line_magic("load_ext", "jupyter_air")
    yield ip
    ip.run_line_magic("unload_ext", "jupyter_air")


def test_magics_are_registered_with_real_help(shell):
    # Given the extension loaded, Then each magic exists and `%%air_distributed?` documents every option
    help_text = shell.find_cell_magic("air_distributed").__doc__
    for option in ("--gpus", "--experiment", "--run-name", "--no-system-metrics", "--timeout"):
        assert option in help_text
    assert "--no-system-metrics" in shell.find_cell_magic("air_run").__doc__
    assert shell.find_line_magic("air_gpu") is not None


def test_unload_removes_the_magics():
    # Given the extension loaded then unloaded, Then the magics are gone
    ip = InteractiveShell.instance()
    ip.run_line_magic("load_ext", "jupyter_air")
    ip.run_line_magic("unload_ext", "jupyter_air")
    assert ip.find_cell_magic("air_distributed") is None and ip.find_line_magic("air_gpu") is None


def test_air_gpu_prints_the_gpus_read_through_nvml(shell, fake_nvml, capsys):
    # Given a node whose (fake) NVML reports two GPUs, When %air_gpu runs
    shell.run_line_magic("air_gpu", "")

    # Then a table lists each GPU with its readings, labelled with the real source
    out = capsys.readouterr().out
    assert "source: nvml" in out and "NOT real hardware" not in out
    assert out.count("NVIDIA H100 80GB HBM3") == 2
    assert "71" in out and "400.0" in out


@pytest.mark.parametrize("nvml_init_error", ["LibraryNotFound"])
def test_air_gpu_says_when_there_is_no_gpu(shell, fake_nvml, capsys):
    # Given NVML that cannot load, When %air_gpu runs, Then it says so plainly, with the reason
    shell.run_line_magic("air_gpu", "")
    assert capsys.readouterr().out.startswith("No GPU on this node:")


@pytest.mark.parametrize("gpu_source_env", ["simulated"])
def test_air_gpu_follows_the_servers_gpu_source_and_labels_simulated_gpus(shell, fake_nvml, capsys, monkeypatch):
    # Given a kernel of a server that chose the simulated source (it exports JUPYTER_AIR_GPU_SOURCE), on a machine
    # where no process ran a call (other tests' calls would be listed on the simulated GPUs, narrowing the table)
    monkeypatch.setattr("jupyter_air.gpu.callers._table", dict)
    # When %air_gpu runs, Then it shows the panel's simulated GPUs, never as real hardware
    shell.run_line_magic("air_gpu", "")
    out = capsys.readouterr().out
    assert "source: simulated, NOT real hardware" in out and out.count("Simulated GPU (not real hardware)") == 2


def test_the_cell_ships_the_notebook_names_it_reads():
    # Given a notebook namespace with variables, IPython's history and a name shadowing a builtin
    from jupyter_air.training.cell import shipped_namespace

    user_ns = {"lr": 0.1, "model": "m", "unused": 1, "_": 5, "_i3": "x", "_private": 2, "id": "run-7", "print": print}
    source = "def f():\n    return model\nprint(lr, _, _i3, _private, id, f())"

    # Then exactly the notebook values the cell reads are shipped
    assert shipped_namespace(source, user_ns) == {"lr": 0.1, "model": "m", "_private": 2, "id": "run-7"}


def test_a_cell_reading_an_unpicklable_name_is_refused_before_anything_starts(shell, store):
    # Given a notebook name that cannot travel to another process
    import threading

    from IPython.core.error import UsageError

    shell.user_ns["lock"] = threading.Lock()

    # When a distributed cell reads it, Then the error names it and says what to do; no run exists
    with pytest.raises(UsageError, match=r"cannot be sent to the workers: lock \(lock\)\. Create them inside"):
        shell.run_cell_magic("air_distributed", "--gpus 2 --experiment magics-refused", "print(lock)")
    assert store.get_experiment_by_name("magics-refused") is None


def test_only_what_the_cell_takes_from_the_notebook_is_a_parameter():
    # Given notebook values, and a cell that reads lr, sets x and rank itself and loops over i
    from jupyter_air.training.cell import scalar_params, shipped_namespace

    user_ns = {"lr": 0.5, "x": 5, "i": 129, "rank": 0, "name": "run-7", "steps": 3}
    source = "x = 1\nrank = 2\nfor i in range(steps):\n    print(lr * x, i, rank)\ndef f(name):\n    return name"

    # Then only the values it reads and never sets are the run's parameters
    assert scalar_params(source, shipped_namespace(source, user_ns)) == {"lr": "0.5", "steps": "3"}


@pytest.mark.usefixtures("no_orphans")
def test_a_distributed_cell_is_listed_as_distributed(shell, store):
    # Given a %%air_distributed cell on 2 CPU ranks, in a notebook where x and i already have values
    shell.user_ns.update({"x": 5, "i": 129})
    cell = "x = 1\nfor i in range(2):\n    x += i"
    shell.run_cell_magic("air_distributed", "--gpus 2 --experiment magics-source --no-system-metrics", cell)

    # Then its run is tagged as a distributed call (the panel shows `distributed`; `magic` is %%air_run's)
    (run,) = store.search_runs([store.get_experiment_by_name("magics-source").experiment_id])
    assert run.data.tags["air.source"] == "distributed" and run.data.tags["air.function"] == "air_distributed cell"
    # And the notebook's x and i, which the cell sets itself, are no parameters of it
    assert run.data.params == {}


@pytest.mark.usefixtures("no_orphans")
def test_attaching_to_a_remote_cell_gives_back_its_values(shell, store):
    from jupyter_air import attach

    # Given a %%air_distributed cell that ran as a job, reading lr and setting scaled
    shell.user_ns["lr"] = 0.5
    options = "--gpus 2 --experiment magics-remote --no-system-metrics --remote"
    shell.run_cell_magic("air_distributed", options, "scaled = lr * 2")
    assert shell.user_ns["scaled"] == 1.0

    # When it is attached to again with jupyter_air.attach
    (run,) = store.search_runs([store.get_experiment_by_name("magics-remote").experiment_id])
    shell.user_ns.pop("scaled")
    returned = attach(run.data.tags["air.job_run_id"])

    # Then it returns the cell's values as the magic takes them, not the ranks' internal results
    assert returned == {"scaled": 1.0}
    # And %air_attach puts them back into the notebook
    shell.run_line_magic("air_attach", run.data.tags["air.job_run_id"])
    assert shell.user_ns["scaled"] == 1.0
