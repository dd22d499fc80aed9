"""Which Ray cluster to use: an address given in the call, else ``$AIR_RAY_ADDRESS``; Ray itself is not imported."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping

from .errors import BadAddress

#: The Ray cluster of multi-node work (``auto``, ``host:6379``, ``ray://host:10001``) for kernels, terminals and the
#: ``air`` command; it overrides ``c.JupyterAir.ray_address``, which the Jupyter server exports to them in it.
RAY_ADDRESS_ENV = "AIR_RAY_ADDRESS"
CLIENT_SCHEME = "ray://"
_HOST_PORT = re.compile(r"^(?:ray://)?(\[[0-9a-fA-F:]+\]|[A-Za-z0-9_.\-]+):(\d{1,5})$")
_EXAMPLES = "'auto' (this machine is a node of the cluster), 'head-host:6379' or 'ray://head-host:10001'"


def configured_address(explicit: str | None = None, environ: Mapping[str, str] | None = None) -> str | None:
    """``explicit`` when given, else ``$AIR_RAY_ADDRESS``, else None (no cluster); checked with :func:`check`."""
    env = os.environ if environ is None else environ
    value = (explicit if explicit is not None else env.get(RAY_ADDRESS_ENV, "")).strip()
    return check(value) if value else None


def check(address: str) -> str:
    """``address`` if it is ``auto``, ``host:port`` or ``ray://host:port``; raises :class:`BadAddress` otherwise."""
    if address == "auto":
        return address
    match = _HOST_PORT.match(address)
    if not match or not 0 < int(match.group(2)) < 65536:
        raise BadAddress(f"Ray address {address!r} is not an address: use {_EXAMPLES}")
    return address


def is_client(address: str) -> bool:
    """True for Ray Client mode (``ray://``): the driver runs on the head node, this process talks to it."""
    return address.startswith(CLIENT_SCHEME)


def host_port(address: str) -> tuple[str, int]:
    """``(host, port)`` of a checked ``host:port`` or ``ray://host:port`` address."""
    host, _, port = address.removeprefix(CLIENT_SCHEME).rpartition(":")
    return host.strip("[]"), int(port)
