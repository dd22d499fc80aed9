"""``pynvml`` for processes that cannot be handed the tests' fake (a UI test's server, a Ray node's actors): put this
folder first on their ``PYTHONPATH`` or ``sys.path``. It is the fake (``tests/fake_pynvml.py``) with one idle GPU
(0 % utilization) whose compute processes are the ``[[pid, bytes], ...]`` that the file named by
``AIR_TEST_NVML_PROCESSES`` holds when read: a test makes a process hold GPU memory by writing its pid there."""

import importlib.util
import json
import os
import pathlib
import sys

_spec = importlib.util.spec_from_file_location("fake_pynvml", pathlib.Path(__file__).parents[1] / "fake_pynvml.py")
_fake = sys.modules["fake_pynvml"] = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_fake)


class _ProcessesFromFile(_fake.FakeNvml):
    def nvmlDeviceGetComputeRunningProcesses(self, handle):
        held = pathlib.Path(os.environ["AIR_TEST_NVML_PROCESSES"])
        self.gpus[handle].processes = [tuple(p) for p in json.loads(held.read_text())] if held.exists() else []
        return super().nvmlDeviceGetComputeRunningProcesses(handle)


sys.modules[__name__] = _ProcessesFromFile([_fake.FakeGpu(utilization_percent=0)])
