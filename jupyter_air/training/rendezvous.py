"""Rendezvous backends whose TCP stores listen on one address, never on every interface.

torch's rendezvous stores listen on every interface (``*:<port>``) and trust what they read, so any host
that can reach the machine could join or feed them. For one node nothing needs to come from outside: the
``air-loopback`` backend opens both of its stores (the rendezvous store and the one the ranks bootstrap
from) on sockets bound to 127.0.0.1 and passes them to ``TCPStore`` as ready listeners.

Several nodes use ``air-static``: torch's static rendezvous (node ``n`` is group rank ``n``), whose one
store lives on node 0 and listens on node 0's own address only. Node 0's actor reserves that listener
(:func:`reserve`) before any node starts, so the port is known to all of them and no other process can
take it meanwhile; a new store per call, since a reused one hands gloo the previous call's addresses.
"""

from __future__ import annotations

import socket
from datetime import timedelta

#: The backends' names in torch's rendezvous registry (``LaunchConfig(rdzv_backend=...)``).
BACKEND = "air-loopback"
STATIC_BACKEND = "air-static"
LOOPBACK = "127.0.0.1"
#: Seconds a store operation may wait (torch's default read timeout).
_READ_TIMEOUT_SECONDS = 60


#: Listeners reserved by :func:`reserve` in node 0's actor, by port, until its rendezvous takes one.
_reserved: dict[int, socket.socket] = {}


def _listener(host: str) -> socket.socket:
    listener = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
    listener.bind((host, 0))
    listener.listen(128)
    return listener


def loopback_store():
    """A ``TCPStore`` server listening on 127.0.0.1 only, on a free port."""
    import torch.distributed as dist

    listener = _listener(LOOPBACK)
    port = listener.getsockname()[1]
    return dist.TCPStore(
        LOOPBACK,
        port,
        is_master=True,
        master_listen_fd=listener.detach(),  # the store owns and closes the socket
        timeout=timedelta(seconds=_READ_TIMEOUT_SECONDS),
    )


def _handler_class():
    from torch.distributed.elastic.rendezvous.dynamic_rendezvous import DynamicRendezvousHandler

    class LoopbackRendezvousHandler(DynamicRendezvousHandler):
        """torch's dynamic rendezvous, with the store the ranks bootstrap from on loopback."""

        def _create_tcp_store_server(self, master_addr, master_port):
            return loopback_store()

        def get_backend(self) -> str:
            return BACKEND

    return LoopbackRendezvousHandler


def _create_handler(params):
    from torch.distributed.elastic.rendezvous.c10d_rendezvous_backend import C10dRendezvousBackend
    from torch.distributed.elastic.rendezvous.dynamic_rendezvous import RendezvousTimeout

    store = loopback_store()
    backend = C10dRendezvousBackend(store, params.run_id)
    return _handler_class().from_backend(
        params.run_id, store, backend, params.min_nodes, params.max_nodes, LOOPBACK, RendezvousTimeout()
    )


def register() -> str:
    """Register the one-node backend with torch (registering it again is a no-op) and return its name."""
    from torch.distributed.elastic.rendezvous import rendezvous_handler_registry

    rendezvous_handler_registry.register(BACKEND, _create_handler)
    return BACKEND


def reserve(host: str) -> int:
    """Listen on ``host`` (this node's address) on a free port for the next multi-node launch's store."""
    listener = _listener(host)
    port = listener.getsockname()[1]
    _reserved[port] = listener
    return port


def unreserve(port: int) -> None:
    """Close a reserved listener its launch never took (the launch failed before its rendezvous)."""
    listener = _reserved.pop(port, None)
    if listener is not None:
        listener.close()


def _static_class():
    from torch.distributed.elastic.rendezvous.static_tcp_rendezvous import StaticTCPRendezvous

    class ReservedStaticRendezvous(StaticTCPRendezvous):
        """torch's static rendezvous; on node 0 its store serves the listener :func:`reserve` opened."""

        def next_rendezvous(self):
            if self.rank == 0 and self._store is None:
                import torch.distributed as dist

                listener = _reserved.pop(self.master_port, None)
                if listener is None:
                    raise RuntimeError(f"no listener was reserved on port {self.master_port} for this launch")
                self._store = dist.TCPStore(
                    self.master_addr,
                    self.master_port,
                    self.world_size,
                    True,
                    self.timeout,
                    master_listen_fd=listener.detach(),  # the store owns and closes the socket
                )
            return super().next_rendezvous()

        def get_backend(self) -> str:
            return STATIC_BACKEND

    return ReservedStaticRendezvous


def _create_static_handler(params):
    from torch.distributed.elastic.rendezvous.static_tcp_rendezvous import create_rdzv_handler

    plain = create_rdzv_handler(params)  # checks the endpoint, rank and timeout as torch does
    return _static_class()(
        plain.master_addr,
        plain.master_port,
        plain.rank,
        plain.world_size,
        plain.run_id,
        int(plain.timeout.total_seconds()),
    )


def register_static() -> str:
    """Register the multi-node backend with torch and return its name."""
    from torch.distributed.elastic.rendezvous import rendezvous_handler_registry

    rendezvous_handler_registry.register(STATIC_BACKEND, _create_static_handler)
    return STATIC_BACKEND
