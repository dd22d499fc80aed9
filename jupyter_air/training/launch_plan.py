"""Where one node's ranks sit in a call's launch (:class:`NodePlace`), how many a node runs, and how PyTorch's
elastic launcher starts them there (:func:`launch_config`)."""

from __future__ import annotations

import pathlib
import uuid
from dataclasses import dataclass, field

from jupyter_air.training import rendezvous
from jupyter_air.training.forkserver_client import Launcher

#: Start method of the ranks, forked by the call's process (a fork of the fork server, which imported torch
#: but never touched CUDA: no rank inherits a CUDA context, and torch is imported already).
START_METHOD = "fork"
#: Collective libraries' socket interface variables: set to the interface of the node's address unless the
#: user chose one (loopback on one node).
_INTERFACE_VARIABLES = ("GLOO_SOCKET_IFNAME", "NCCL_SOCKET_IFNAME")
#: Seconds a node of a multi-node launch waits for the others at the rendezvous before it gives up.
JOIN_TIMEOUT_SECONDS = 60


def world_size_for(gpus: int | None) -> tuple[int, int]:
    """``(processes, gpus_used)``: one process per GPU, or ``gpus`` CPU processes on a node without GPUs.

    ``gpus`` is checked by :class:`~jupyter_air.training.options.RunOptions` when the call is defined. The
    visible GPUs are counted by the fork server (waiting for it to be ready).
    """
    visible = Launcher.get().info()["cuda_devices"]
    if visible == 0:
        return (gpus or 1), 0
    if gpus is not None and gpus > visible:
        raise ValueError(
            f"gpus={gpus} but this node has {visible} visible GPU(s)"
            " (CUDA_VISIBLE_DEVICES limits them): ask for at most that many"
        )
    count = gpus or visible
    return count, count


@dataclass(frozen=True)
class NodePlace:
    """Where one node's ranks sit in a launch: node ``node_rank`` of ``nnodes``, ``nproc`` ranks on each.

    Node ``n`` holds the global ranks ``n * nproc`` to ``n * nproc + nproc - 1``. ``endpoint`` is node 0's
    rendezvous store (``host:port``, several nodes only); ``local_addr`` is this node's address.
    """

    nproc: int
    nnodes: int = 1
    node_rank: int = 0
    endpoint: str = ""
    local_addr: str = "127.0.0.1"
    run_id: str = field(default_factory=lambda: f"air-{uuid.uuid4().hex[:12]}")

    @property
    def world_size(self) -> int:
        return self.nnodes * self.nproc

    @property
    def ranks(self) -> range:
        return range(self.node_rank * self.nproc, (self.node_rank + 1) * self.nproc)


def launch_config(place: NodePlace, folder: pathlib.Path, start_method: str = START_METHOD):
    """The elastic launcher's settings for one node of the call in ``folder``: its ranks, no restarts.

    One node: nothing listens, the stores are files in the call's private folder. Several: torch's static
    rendezvous, whose store is node 0's, listening on node 0's address only (see
    :mod:`~jupyter_air.training.rendezvous`). The agent leaves SIGTERM to the call's process.
    """
    from torch.distributed.elastic.multiprocessing import DefaultLogsSpecs
    from torch.distributed.launcher.api import LaunchConfig

    if place.nnodes == 1:
        backend, endpoint, address = rendezvous.register(), "", rendezvous.LOOPBACK
        configs = {"folder": str(folder)}
    else:
        backend, endpoint, address = rendezvous.register_static(), place.endpoint, place.local_addr
        configs = {"rank": place.node_rank, "timeout": JOIN_TIMEOUT_SECONDS}
    return LaunchConfig(
        min_nodes=place.nnodes,
        max_nodes=place.nnodes,
        nproc_per_node=place.nproc,
        run_id=place.run_id,
        rdzv_backend=backend,
        rdzv_endpoint=endpoint,
        rdzv_configs=configs,
        local_addr=address,
        max_restarts=0,
        monitor_interval=0.05,
        start_method=start_method,
        logs_specs=DefaultLogsSpecs(log_dir=str(folder / "elastic")),
        signals_to_handle="SIGHUP",
    )


def interfaces_for(address: str) -> dict[str, str]:
    """The collective libraries' interface variables naming the network interface that holds ``address``."""
    import psutil

    for name, addresses in psutil.net_if_addrs().items():
        if any(a.address == address for a in addresses):
            return dict.fromkeys(_INTERFACE_VARIABLES, name)
    return {}
