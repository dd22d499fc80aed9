"""A fake ``pynvml`` with the real names and exception classes, driving jupyter_air's real NVML code path."""

from __future__ import annotations

import threading
import time
import types
from collections import Counter
from dataclasses import dataclass, field

NVML_TEMPERATURE_GPU = 0


class NVMLError(Exception):
    pass


_ERROR_NAMES = (
    "LibraryNotFound",
    "DriverNotLoaded",
    "NoPermission",
    "NotSupported",
    "GpuIsLost",
    "Unknown",
    "GpuNotFound",
    "ResetRequired",
    "Uninitialized",
)
ERRORS = {name: type(f"NVMLError_{name}", (NVMLError,), {}) for name in _ERROR_NAMES}


@dataclass
class FakeGpu:
    name: str = "NVIDIA H100 80GB HBM3"
    utilization_percent: int = 37
    memory_used_bytes: int = 1 << 30
    memory_total_bytes: int = 80 << 30
    temperature_celsius: int | str = 54  # an error name ("NotSupported") makes the call raise it
    power_milliwatts: int = 210_500
    lost_after: int | None = None  # raise GpuIsLost once this many utilization reads happened
    processes: list[tuple[int, int]] = field(default_factory=list)  # (pid, used bytes)
    reads: int = 0
    energy_error: str | None = None  # an error name ("NotSupported": before Volta) makes the energy counter raise it
    # The energy counter: millijoules at ``energy_since`` (as since the driver loaded), then the power integrated.
    energy_mj: float = 7_200_000_000.0
    energy_since: float = field(default_factory=time.monotonic)

    def __setattr__(self, name, value):
        if name == "power_milliwatts" and name in self.__dict__:  # the counter keeps what the old power added
            self.__dict__["energy_mj"] = self.energy_millijoules()
            self.__dict__["energy_since"] = time.monotonic()
        super().__setattr__(name, value)

    def energy_millijoules(self) -> float:
        """What NVML's total energy counter reads now: constant power since the last change, integrated."""
        return self.energy_mj + self.power_milliwatts * (time.monotonic() - self.energy_since)


class FakeNvml(types.ModuleType):
    """Behaves as the ``pynvml`` module; counts every call and can fail, block or go slow on demand."""

    NVML_TEMPERATURE_GPU = NVML_TEMPERATURE_GPU
    NVMLError = NVMLError

    def __init__(self, gpus: list[FakeGpu], init_error: str | None = None):
        super().__init__("pynvml")
        for name, cls in ERRORS.items():
            setattr(self, f"NVMLError_{name}", cls)
        self.gpus = gpus
        self.init_error = init_error
        self.calls: Counter = Counter()
        self.delay_seconds = 0.0
        self.read_error: Exception | None = None  # raised by every utilization read: a broken binding, not NVML
        self.gate = threading.Event()
        self.gate.set()

    def total_calls(self) -> int:
        return sum(self.calls.values())

    def _call(self, name: str) -> None:
        self.calls[name] += 1
        self.gate.wait(30)
        if self.delay_seconds:
            time.sleep(self.delay_seconds)

    def nvmlInit(self):
        self._call("nvmlInit")
        if self.init_error:
            raise ERRORS[self.init_error]()

    def nvmlShutdown(self):
        self._call("nvmlShutdown")

    def nvmlDeviceGetCount(self):
        self._call("nvmlDeviceGetCount")
        return len(self.gpus)

    def nvmlDeviceGetHandleByIndex(self, index):
        self._call("nvmlDeviceGetHandleByIndex")
        return index

    def _gpu(self, handle) -> FakeGpu:
        gpu = self.gpus[handle]
        if gpu.lost_after is not None and gpu.reads >= gpu.lost_after:
            raise ERRORS["GpuIsLost"]()
        return gpu

    def nvmlDeviceGetName(self, handle):
        self._call("nvmlDeviceGetName")
        return self._gpu(handle).name

    def nvmlDeviceGetUUID(self, handle):
        self._call("nvmlDeviceGetUUID")
        return f"GPU-fake-{handle}".encode()

    def nvmlDeviceGetMemoryInfo(self, handle):
        self._call("nvmlDeviceGetMemoryInfo")
        gpu = self._gpu(handle)
        return types.SimpleNamespace(
            used=gpu.memory_used_bytes,
            total=gpu.memory_total_bytes,
            free=gpu.memory_total_bytes - gpu.memory_used_bytes,
        )

    def nvmlDeviceGetUtilizationRates(self, handle):
        self._call("nvmlDeviceGetUtilizationRates")
        if self.read_error is not None:
            raise self.read_error
        gpu = self._gpu(handle)
        gpu.reads += 1
        return types.SimpleNamespace(gpu=gpu.utilization_percent, memory=0)

    def nvmlDeviceGetTemperature(self, handle, sensor):
        self._call("nvmlDeviceGetTemperature")
        value = self._gpu(handle).temperature_celsius
        if isinstance(value, str):
            raise ERRORS[value]()
        return value

    def nvmlDeviceGetPowerUsage(self, handle):
        self._call("nvmlDeviceGetPowerUsage")
        return self._gpu(handle).power_milliwatts

    def nvmlDeviceGetTotalEnergyConsumption(self, handle):
        self._call("nvmlDeviceGetTotalEnergyConsumption")
        gpu = self._gpu(handle)
        if gpu.energy_error:
            raise ERRORS[gpu.energy_error]()
        return int(gpu.energy_millijoules())

    def nvmlDeviceGetComputeRunningProcesses(self, handle):
        self._call("nvmlDeviceGetComputeRunningProcesses")
        return [types.SimpleNamespace(pid=pid, usedGpuMemory=used) for pid, used in self._gpu(handle).processes]
