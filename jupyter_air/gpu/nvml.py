"""The one module that talks to NVML (``nvidia-ml-py``); imported and initialised lazily, never at import time."""

from __future__ import annotations

import importlib
import logging

import psutil

from .types import DeviceInfo, GpuProcess, GpuUnavailable, Reading

log = logging.getLogger(__name__)

_START_REASONS = {
    "NVMLError_LibraryNotFound": (
        "The NVIDIA driver library (libnvidia-ml.so) was not found: this machine has no NVIDIA driver, "
        "or it is not on the library path. Install the NVIDIA driver to see GPUs."
    ),
    "NVMLError_DriverNotLoaded": (
        "The NVIDIA driver is installed but not loaded. Load it (e.g. `sudo modprobe nvidia`) or reboot, "
        "then press Refresh."
    ),
    "NVMLError_NoPermission": (
        "No permission to access the NVIDIA GPUs. Add the server's user to the group that owns /dev/nvidia* "
        "or run the container with GPU access."
    ),
}
# Failures that mean the whole device is gone for this sample; anything else is one unsupported metric.
_DEVICE_FAILURES = ("NVMLError_GpuIsLost", "NVMLError_Unknown", "NVMLError_GpuNotFound", "NVMLError_ResetRequired")


def _error_text(err: Exception) -> str:
    """``NVMLError_GpuIsLost: GPU is lost``: the NVML error's name, then its message when it has one."""
    return f"{type(err).__name__}: {err}" if str(err) else type(err).__name__


def _text(value) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


class NvmlSource:
    """Reads utilization, memory, temperature, power and processes of every GPU through NVML."""

    name = "nvml"

    def __init__(self):
        self._nvml = None
        self._handles: list = []
        self.devices: list[DeviceInfo] = []
        self.available = False
        self.reason: str | None = None
        self._logged: set[tuple] = set()

    def open(self) -> None:
        """Initialise NVML and list the devices; raises ``GpuUnavailable`` with a reason a person understands."""
        try:
            nvml = importlib.import_module("pynvml")
        except ImportError as err:
            raise GpuUnavailable(
                "nvidia-ml-py is not installed in the server's environment: pip install nvidia-ml-py"
            ) from err
        try:
            nvml.nvmlInit()
            count = nvml.nvmlDeviceGetCount()
        except nvml.NVMLError as err:
            kind = type(err).__name__
            raise GpuUnavailable(_START_REASONS.get(kind, f"NVML could not start: {err}")) from err
        if count == 0:
            raise GpuUnavailable("NVML started but reports no GPU on this machine.")
        self._nvml = nvml
        self._handles = []
        self.devices = []
        for index in range(count):
            self.devices.append(self._describe(index))
        self.available = True

    def _describe(self, index: int) -> DeviceInfo:
        nvml = self._nvml
        try:
            handle = nvml.nvmlDeviceGetHandleByIndex(index)
            device = DeviceInfo(
                index=index,
                uuid=_text(nvml.nvmlDeviceGetUUID(handle)),
                name=_text(nvml.nvmlDeviceGetName(handle)),
                memory_total_bytes=int(nvml.nvmlDeviceGetMemoryInfo(handle).total),
            )
            self._handles.append(handle)
            return device
        except nvml.NVMLError as err:
            self._handles.append(None)
            message = f"GPU {index} could not be opened: {_error_text(err)}"
            self._log_once(("open", index, type(err).__name__), "%s", message)
            return DeviceInfo(index=index, uuid=None, name=None, memory_total_bytes=None, error=message)

    def read(self) -> Reading:
        """One sample of every device; a failing device keeps its slot with ``None`` values and an error."""
        reading = Reading.empty(len(self.devices))
        for index, handle in enumerate(self._handles):
            if handle is None:
                reading.errors[index] = self.devices[index].error
                continue
            try:
                self._read_device(index, handle, reading)
            except self._nvml.NVMLError as err:
                message = f"GPU {index} failed: {_error_text(err)}"
                self._log_once(("read", index, type(err).__name__), "%s", message)
                for values in (
                    reading.utilization_percent,
                    reading.memory_used_bytes,
                    reading.memory_total_bytes,
                    reading.temperature_celsius,
                    reading.power_watts,
                ):
                    values[index] = None
                reading.errors[index] = message
                reading.processes = [p for p in reading.processes if p.gpu_index != index]
        return reading

    def _read_device(self, index: int, handle, reading: Reading) -> None:
        nvml = self._nvml
        utilization = self._metric(index, "utilization", nvml.nvmlDeviceGetUtilizationRates, handle)
        reading.utilization_percent[index] = None if utilization is None else float(utilization.gpu)
        memory = self._metric(index, "memory", nvml.nvmlDeviceGetMemoryInfo, handle)
        if memory is not None:
            reading.memory_used_bytes[index] = int(memory.used)
            reading.memory_total_bytes[index] = int(memory.total)
        temperature = self._metric(
            index, "temperature", nvml.nvmlDeviceGetTemperature, handle, nvml.NVML_TEMPERATURE_GPU
        )
        reading.temperature_celsius[index] = None if temperature is None else float(temperature)
        milliwatts = self._metric(index, "power", nvml.nvmlDeviceGetPowerUsage, handle)
        reading.power_watts[index] = None if milliwatts is None else milliwatts / 1000.0
        for proc in self._metric(index, "processes", nvml.nvmlDeviceGetComputeRunningProcesses, handle) or ():
            used = getattr(proc, "usedGpuMemory", None)
            reading.processes.append(
                GpuProcess(index, int(proc.pid), _process_name(proc.pid), None if used is None else int(used))
            )

    def energy_millijoules(self) -> list[int | None]:
        """NVML's total energy counter of each device (Volta and newer); ``None`` where unsupported or failing."""
        counters: list[int | None] = []
        call = self._nvml.nvmlDeviceGetTotalEnergyConsumption
        for index, handle in enumerate(self._handles):
            try:
                value = None if handle is None else self._metric(index, "energy", call, handle)
            except self._nvml.NVMLError:
                value = None  # a lost device: its read() reports it
            counters.append(None if value is None else int(value))
        return counters

    def _metric(self, index: int, metric: str, call, *args):
        """Value of one NVML call; ``None`` when this device does not support it. Device failures propagate."""
        try:
            return call(*args)
        except self._nvml.NVMLError as err:
            kind = type(err).__name__
            if kind in _DEVICE_FAILURES:
                raise
            self._log_once((metric, index, kind), "GPU %d cannot report %s: %s", index, metric, _error_text(err))
            return None

    def close(self) -> None:
        if self._nvml is not None:
            try:
                self._nvml.nvmlShutdown()
            except self._nvml.NVMLError as err:
                log.debug("nvmlShutdown failed: %s", err)
            self._nvml = None

    def _log_once(self, key: tuple, message: str, *args) -> None:
        if key not in self._logged:
            self._logged.add(key)
            log.warning(message, *args)


def _process_name(pid: int) -> str | None:
    try:
        return psutil.Process(pid).name()
    except (psutil.Error, OSError):
        return None
