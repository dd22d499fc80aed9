"""Without a Ray address, notebook calls, workloads and the GPU routes never import Ray."""

from __future__ import annotations

import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent(
    """
    import asyncio, os, sys
    from jupyter_air import distributed
    from jupyter_air.cli import main
    from jupyter_air.gpu.sampler import Sampler
    from jupyter_air.gpu.service import GpuService
    from jupyter_air.gpu.sources import open_source

    def one():
        return 1

    if __name__ == "__main__":
        assert distributed(one, gpus=1, experiment="no-cluster").distributed() == [1]
        assert main(["run", "-f", sys.argv[1], "--dry-run"]) == 0
        service = GpuService(Sampler(lambda: open_source("simulated", 1), 1.0, 60.0, 60.0))
        assert asyncio.run(service.snapshot())["available"]
        print("RAY IMPORTED:", "ray" in sys.modules)
    """
)


def test_nothing_imports_ray_without_an_address(store, tmp_path, monkeypatch):
    # Given no Ray address anywhere, a one-node call, a workload and the GPU service
    monkeypatch.delenv("AIR_RAY_ADDRESS", raising=False)
    script = tmp_path / "no_cluster.py"
    script.write_text(SCRIPT)
    workload = tmp_path / "w.yaml"
    workload.write_text("experiment_name: x\ncommand: echo hi\ncompute: {num_accelerators: 0}\n")

    # When they all run in a fresh interpreter
    result = subprocess.run([sys.executable, str(script), str(workload)], capture_output=True, text=True, timeout=300)

    # Then they work as they always did and Ray was never imported
    assert result.returncode == 0, result.stderr
    assert "RAY IMPORTED: False" in result.stdout
