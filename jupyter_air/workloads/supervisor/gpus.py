"""This node's GPUs for workloads: the accelerator_type check and the indexes that can be reserved."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from jupyter_air.gpu.sources import opened
from jupyter_air.workloads.state.quota import Quota

_TYPE = re.compile(r"^GPU_(?:(\d+)x)?(\S+)$")


@dataclass(frozen=True)
class NodeGpus:
    """Usable GPUs of this node (index, name); `reason` says why there are none."""

    gpus: list[tuple[int, str]]
    reason: str | None
    #: The GPU source they come from: ``simulated`` GPUs are no real hardware, and are said to be so.
    source: str = "nvml"

    @property
    def indexes(self) -> list[int]:
        return [index for index, _ in self.gpus]


def cuda_environment(gpus: Sequence[int]) -> dict[str, str]:
    """What makes work see exactly ``gpus``, numbered as NVML, the ledger and ``nvidia-smi`` number them (CUDA's
    own default order puts the fastest GPU first); empty for no GPU."""
    if not gpus:
        return {}
    return {"CUDA_VISIBLE_DEVICES": ",".join(map(str, gpus)), "CUDA_DEVICE_ORDER": "PCI_BUS_ID"}


def node_gpus() -> NodeGpus:
    """This node's GPUs from the one configured source (NVML, or the labelled simulated GPUs of a demo);
    a device that cannot be opened is not offered."""
    with opened() as source:
        usable = [(d.index, d.name or "") for d in source.devices if d.error is None]
        return NodeGpus(usable, None if usable else (source.reason or "no usable GPU"), source.name)


def check_compute(num_accelerators: int, accelerator_type: str | None, node: NodeGpus) -> str | None:
    """Why this node can never run the workload's compute request (``field.path: why``), or None when it can."""
    simulated = node.source == "simulated"
    note = " (simulated GPUs, JUPYTER_AIR_GPU_SOURCE=simulated: not real hardware)" if simulated else ""
    if num_accelerators > len(node.gpus):
        have = f"{len(node.gpus)}{note}" if node.gpus else f"none ({node.reason})"
        return (
            f"compute.num_accelerators: {num_accelerators} GPU(s) requested but this node has {have}; "
            "set compute.num_accelerators: 0 to run on CPU"
        )
    if accelerator_type:
        match = _TYPE.match(accelerator_type)
        count = int(match.group(1) or 1) if match else 1
        model = (match.group(2) if match else accelerator_type).lower()
        matching = [name for _, name in node.gpus if model in name.lower()]
        if len(matching) < count:
            names = ", ".join(sorted({name for _, name in node.gpus})) or "no GPU"
            return (
                f"compute.accelerator_type: {accelerator_type} needs {count} '{match.group(2) if match else model}'"
                f" GPU(s) but this node has {len(matching)} ({names}){note}"
            )
    return None


def local_count() -> int:
    """How many usable GPUs this node has."""
    return len(node_gpus().gpus)


def check_local(
    num_accelerators: int, accelerator_type: str | None, user: str, waiting: Callable[[str], int]
) -> tuple[str | None, list[str]]:
    """Why this node cannot run the compute request of ``user`` (``field.path: why``, None when it can), their
    claims in line (``waiting(user)``) counted against the queue quota, and notes to show (simulated GPUs are no
    hardware)."""
    if not (num_accelerators or accelerator_type):
        return None, []
    node = node_gpus()
    problem = check_compute(num_accelerators, accelerator_type, node) or _over_quota(num_accelerators, user, waiting)
    if problem is None and node.source == "simulated":
        note = "GPUs checked against the simulated GPU source (JUPYTER_AIR_GPU_SOURCE=simulated): not real hardware"
        return None, [note]
    return problem, []


def _over_quota(num_accelerators: int, user: str, waiting: Callable[[str], int]) -> str | None:
    """Why the admin's quotas per user (GPUs at once, claims in line) refuse the request, or None."""
    try:
        quota = Quota.from_environment()
    except ValueError as err:
        return f"the GPU quota cannot be read: {err}"
    if refusal := quota.refusal(num_accelerators):
        return f"compute.num_accelerators: {num_accelerators} GPU(s) requested, {refusal}"
    if not num_accelerators or quota.queued is None:
        return None
    queued = quota.queued_refusal(user, waiting(user))
    return queued and f"compute.num_accelerators: {queued}"
