"""Rendezvous backends that no other local user can feed: nothing a call reads from them is another user's.

torch's dynamic rendezvous keeps its state as pickles in a ``TCPStore`` and unpickles them about every
second; any local user can connect to a TCP port, even one on 127.0.0.1, and write there. So on one node
(``air-private``) nothing listens at all: the agent and the ranks share ``FileStore`` files in the call's
folder, which is private to the user (mode 0700); ranks find theirs through the ``env://`` handler that
:func:`use_private_store` installs, which is what ``dist.init_process_group("gloo")`` uses.

Several nodes use ``air-static``: torch's static rendezvous (node ``n`` is group rank ``n``), which exchanges
JSON, never pickles, through one store on node 0 listening on node 0's own address only. Node 0's launcher
reserves that listener (:func:`reserve`) before any node starts, so the port is known to all of them and no
other process can take it meanwhile; a new store per call, since a reused one hands gloo the previous call's
addresses.
"""

from __future__ import annotations

import os
import socket
from datetime import timedelta
from pathlib import Path

#: The backends' names in torch's rendezvous registry (``LaunchConfig(rdzv_backend=...)``).
BACKEND = "air-private"
STATIC_BACKEND = "air-static"
LOOPBACK = "127.0.0.1"
#: Files of the one-node stores in the call's folder: the agent's, and the ranks'.
AGENT_STORE, RANKS_STORE = "agent.store", "ranks.store"
#: Environment variable telling a rank the file of its store (one node only).
STORE_ENV = "AIR_RANKS_STORE"

#: Listeners reserved by :func:`reserve` in node 0's launcher, by port, until its rendezvous takes one.
_reserved: dict[int, socket.socket] = {}


def _file_store(path: Path, timeout: timedelta):
    import torch.distributed as dist

    store = dist.FileStore(str(path), -1)  # -1: never deleted by torch; the call's folder goes with the call
    store.set_timeout(timeout)
    return store


def _private_class():
    from torch.distributed.elastic.rendezvous.api import (
        RendezvousHandler,
        RendezvousInfo,
        RendezvousStoreInfo,
    )

    class PrivateRendezvous(RendezvousHandler):
        """The one node of a launch is group rank 0 of 1; its store is a file in the call's private folder."""

        def __init__(self, run_id: str, folder: Path, timeout: timedelta):
            self._run_id = run_id
            self._folder = folder
            self._timeout = timeout

        def get_backend(self) -> str:
            return BACKEND

        def next_rendezvous(self):
            store = _file_store(self._folder / AGENT_STORE, self._timeout)
            return RendezvousInfo(store, 0, 1, RendezvousStoreInfo(LOOPBACK, 0))

        def is_closed(self) -> bool:
            return False

        def set_closed(self) -> None:
            pass

        def num_nodes_waiting(self) -> int:
            return 0

        def get_run_id(self) -> str:
            return self._run_id

        def shutdown(self) -> bool:
            return True

    return PrivateRendezvous


def _create_private_handler(params):
    folder = Path(params.config["folder"])
    return _private_class()(params.run_id, folder, timedelta(seconds=params.get_as_int("timeout", 600)))


def register() -> str:
    """Register the one-node backend with torch (again is a no-op) and return its name; its ``folder`` config
    is the call's folder."""
    from torch.distributed.elastic.rendezvous import rendezvous_handler_registry

    rendezvous_handler_registry.register(BACKEND, _create_private_handler)
    return BACKEND


def _env_handler(url: str, timeout: timedelta = timedelta(minutes=30), **kwargs):
    """``env://`` for a rank of a one-node call: its rank and world size from the launcher, the ranks' file store."""
    rank, world_size = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    yield (_file_store(Path(os.environ[STORE_ENV]), timeout), rank, world_size)
    raise RuntimeError("a one-node call cannot rendezvous again (its ranks are never restarted)")


def use_private_store(folder: Path) -> None:
    """In a rank of a one-node call: ``init_process_group()`` (``env://``) rendezvous through the call's file
    store, never a TCP store another user could reach."""
    import importlib

    c10d_rendezvous = importlib.import_module("torch.distributed.rendezvous")  # the module, not its function
    os.environ[STORE_ENV] = str(folder / RANKS_STORE)
    # torch refuses to register a scheme twice; its table is the documented hook's own storage.
    c10d_rendezvous._rendezvous_handlers["env"] = _env_handler  # noqa: SLF001


def _listener(host: str) -> socket.socket:
    listener = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
    listener.bind((host, 0))
    listener.listen(128)
    return listener


def reserve(host: str) -> int:
    """Listen on ``host`` (this node's address) on a free port for the next multi-node launch's store."""
    listener = _listener(host)
    port = listener.getsockname()[1]
    _reserved[port] = listener
    return port


def reserved_ports() -> list[int]:
    return list(_reserved)


def unreserve(port: int) -> None:
    """Close a reserved listener (its launch never took it, or a process forked for it holds its own copy)."""
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
