"""A one-node rendezvous whose TCP stores listen on loopback only.

torch's c10d rendezvous listens on every interface (``*:<port>``) and its store trusts what it reads,
so any host that can reach the machine could join or feed it. For one node nothing needs to come from
outside: this backend opens both of its stores (the rendezvous store and the one the ranks bootstrap
from) on sockets bound to 127.0.0.1 and passes them to ``TCPStore`` as ready listeners.
"""

from __future__ import annotations

import socket
from datetime import timedelta

#: The backend's name in torch's rendezvous registry (``LaunchConfig(rdzv_backend=...)``).
BACKEND = "air-loopback"
LOOPBACK = "127.0.0.1"
#: Seconds a store operation may wait (torch's default read timeout).
_READ_TIMEOUT_SECONDS = 60


def loopback_store():
    """A ``TCPStore`` server listening on 127.0.0.1 only, on a free port."""
    import torch.distributed as dist

    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind((LOOPBACK, 0))
    listener.listen(128)
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
    """Register the backend with torch (registering it again is a no-op) and return its name."""
    from torch.distributed.elastic.rendezvous import rendezvous_handler_registry

    rendezvous_handler_registry.register(BACKEND, _create_handler)
    return BACKEND
