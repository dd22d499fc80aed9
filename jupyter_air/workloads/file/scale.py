"""Where a workload runs: this node as today, or a Ray cluster (how many nodes, how many GPUs on each).

The address says which cluster (``--ray-address``, ``compute.ray_address``, else ``$AIR_RAY_ADDRESS``);
``compute.num_nodes`` above 1, or an address given with the workload, says to use it. With only the
environment's address, a workload also goes to the cluster when it asks for more GPUs than this node has.
``compute.num_accelerators`` is the attempt's total: spread evenly, or as whole nodes when
``num_nodes`` is not given (8 GPUs on nodes of 4: 2 nodes).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from jupyter_air.cluster.address import RAY_ADDRESS_ENV, configured_address
from jupyter_air.cluster.connect import connect, ray_module
from jupyter_air.cluster.errors import BadAddress
from jupyter_air.cluster.placement import bundle, why_never
from jupyter_air.workloads.file.spec import Compute


@dataclass(frozen=True)
class Scale:
    """The executor of a workload and its shape."""

    executor: str
    address: str | None
    num_nodes: int
    gpus_per_node: int


class ScaleError(ValueError):
    """The workload's compute cannot be met as asked; the message names the field and what to change."""


def plan(compute: Compute, flag_address: str | None, local_gpus: Callable[[], int]) -> Scale:
    """The scale of a workload; joins the cluster to read its nodes' GPUs when it goes there."""
    explicit = flag_address or compute.ray_address
    try:
        address = configured_address(explicit)
    except BadAddress as exc:
        raise ScaleError(f"--ray-address / compute.ray_address: {exc}") from None
    wanted = compute.num_nodes or 1
    if wanted > 1 or explicit:
        if address is None:
            raise ScaleError(
                f"compute.num_nodes: {wanted} needs a Ray cluster: pass --ray-address, set compute.ray_address "
                f"or {RAY_ADDRESS_ENV} (e.g. auto on a node of the cluster, or ray://head-host:10001)"
            )
        return _on_cluster(compute, address)
    if address and compute.num_nodes is None and compute.num_accelerators > local_gpus():
        return _on_cluster(compute, address)
    return Scale("local", None, 1, compute.num_accelerators)


def _on_cluster(compute: Compute, address: str) -> Scale:
    if compute.accelerator_type:
        raise ScaleError(
            "compute.accelerator_type is not used on a Ray cluster (Ray places by GPU count): remove it, or label "
            "the nodes and run where they are"
        )
    connect(address)
    counts = [int(n["Resources"].get("GPU", 0)) for n in ray_module().nodes() if n.get("Alive")]
    largest, total = max(counts, default=0), compute.num_accelerators
    if compute.num_nodes:
        nodes = compute.num_nodes
        if total % nodes:
            raise ScaleError(
                f"compute.num_accelerators: {total} GPU(s) cannot be split evenly over compute.num_nodes: {nodes}; "
                f"ask for a multiple of {nodes}"
            )
        per_node = total // nodes
    elif total <= max(largest, 0) or total == 0:
        nodes, per_node = 1, total
    elif largest and total % largest == 0:
        nodes, per_node = total // largest, largest
    else:
        raise ScaleError(
            f"compute.num_accelerators: {total} GPU(s) is more than one node's {largest} and not a multiple of "
            f"{largest or 'a node'}: ask for {largest} or {2 * largest} (1 or 2 nodes), or set compute.num_nodes"
            if largest
            else f"compute.num_accelerators: {total} GPU(s) asked for, but the Ray cluster at {address} has no GPU"
        )
    never = why_never(nodes, bundle(per_node, 1))
    if never:
        raise ScaleError(never)
    return Scale("ray", address, nodes, per_node)
