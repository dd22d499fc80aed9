"""Joining the Ray cluster: a probe that names a bad address in seconds, then ``ray.init`` once per process.

``ray.init("host:1")`` retries for minutes (821 s measured) before it gives up, so the address is probed
first: a TCP connection, then one gRPC call with a deadline, carrying Ray's token as Ray's own calls do
(:mod:`.auth`), so the address must be the cluster's: ``auto`` is made concrete only from this user's own
processes and files (:mod:`.discovery`), never from another user's. Rank and workload output never goes through
Ray's log forwarding (``log_to_driver=False``, so Ray's de-duplication of repeated lines never applies): each
process writes its own log file on its node, and the node's actor hands the new bytes to the driver.
"""

from __future__ import annotations

import contextlib
import ipaddress
import logging
import signal
import socket
import threading
import time

from . import auth, discovery
from .address import host_port, is_client
from .errors import ClusterUnreachable

#: Seconds the probe waits for the TCP connection and for the gRPC answer.
PROBE_SECONDS = 2.0
#: Connections tried through Ray Client (``ray://``) before joining fails: its proxy now and then fails to start
#: a new client's server twice in a row on a loaded machine (seen once in about a dozen test runs).
_CLIENT_ATTEMPTS = 3
_INSTALL_HINT = "install Ray where this runs: `pip install 'jupyter-air[ray]'` (then restart the kernel or server)"

_lock = threading.Lock()
_joined: dict[str, object] = {"address": None, "generation": 0}


def ray_module():
    """``import ray``, or an error that says how to install it."""
    try:
        import ray
    except ImportError as exc:
        raise ClusterUnreachable(f"a Ray cluster is configured but Ray is not installed: {_INSTALL_HINT}") from exc
    return ray


def connect(address: str) -> int:
    """Join the cluster at ``address`` unless this process already has; returns the connection's generation
    (it changes when a new connection replaces the old one, and with it every actor made on the old one)."""
    ray = ray_module()
    with _lock:
        if ray.is_initialized():
            if _joined["address"] == address:
                return int(_joined["generation"])
            if _joined["address"] is None and not _same_cluster(ray, address):
                raise ClusterUnreachable(
                    f"this process already joined another Ray cluster with ray.init(); to use {address}, call "
                    "ray.shutdown() first (or pass the address that ray.init() used)"
                )
        if not ray.is_initialized() or _joined["address"] is not None:
            if address == "auto":
                auth.follow_ray_for_auto()
            target = resolve(address)
            probe(address, target)  # before leaving the current cluster: a bad address leaves it as it was
            if ray.is_initialized():
                ray.shutdown()
            _join(ray, address, target)
        _joined["address"] = address
        _joined["generation"] = int(_joined["generation"]) + 1
        return int(_joined["generation"])


def gpu_pool() -> tuple[str, int]:
    """The joined cluster as the GPU ledger names its pool (``Ray cluster <GCS address>``, the same whichever address
    reached it where Ray says) and how many GPUs its live nodes have."""
    ray = ray_module()
    try:
        name = ray.get_runtime_context().gcs_address
    except Exception:  # noqa: BLE001 - Ray Client does not say it: the address joined names the cluster
        name = None
    return f"Ray cluster {name or _joined['address']}", int(ray.cluster_resources().get("GPU", 0))


def disconnect() -> None:
    """Leave the cluster this module joined (its actors and placement groups go with the connection)."""
    with _lock:
        if _joined["address"] is not None:
            ray_module().shutdown()
            _joined["address"] = None


def _join(ray, address: str, target: str) -> None:
    kwargs: dict = {"log_to_driver": False, "logging_level": logging.WARNING}
    host, _ = host_port(target)
    if not is_client(address) and _is_loopback(host):
        kwargs["_node_ip_address"] = host  # a cluster on this machine's loopback: stay on it
    attempts = _CLIENT_ATTEMPTS if is_client(address) else 1
    for attempt in range(1, attempts + 1):
        try:
            with _own_sigterm():
                ray.init(address=target, **kwargs)
            return
        except Exception as exc:  # Ray raises many kinds: each becomes one clear error
            # Ray Client's proxy now and then fails to start the server of a new client ("Initialization failure
            # from server: Starting Ray client server failed"); a second connection gets a new one.
            if isinstance(exc, ConnectionAbortedError) and attempt < attempts:
                time.sleep(1.0)
                continue
            raise ClusterUnreachable(
                f"joining the Ray cluster at {address} failed: {type(exc).__name__}: {exc}"
            ) from exc


@contextlib.contextmanager
def _own_sigterm():
    """Keep this process's SIGTERM handler: ``ray.init`` replaces it with ``sys.exit``, which would end a supervisor
    before it stops its nodes, or a kernel, mid-cell."""
    main = threading.current_thread() is threading.main_thread()
    previous = signal.getsignal(signal.SIGTERM) if main else None
    try:
        yield
    finally:
        if main and previous is not None:
            signal.signal(signal.SIGTERM, previous)


def resolve(address: str) -> str:
    """``auto`` made concrete from this user's own raylets and record (:mod:`.discovery`), in Ray's form."""
    if address != "auto":
        return address
    from ray._private.services import canonicalize_bootstrap_address

    found = discovery.auto_address()
    try:
        canonical = canonicalize_bootstrap_address(found)
    except ValueError:
        canonical = None
    if not canonical:
        raise ClusterUnreachable(
            f"Ray address 'auto' gave {found!r}, not a cluster's address: {discovery.GIVE_ADDRESS}"
        )
    return canonical


def probe(address: str, target: str, seconds: float = PROBE_SECONDS) -> None:
    """Fail within ``seconds`` unless ``target`` answers as a Ray GCS (or a Ray Client server for ``ray://``) to a
    call that carries Ray's token when this process has one."""
    import grpc

    host, port = host_port(target)
    what = "Ray Client server" if is_client(target) else "Ray head (GCS)"
    named = address if address == target else f"{address} ({target})"
    try:
        with socket.create_connection((host, port), timeout=seconds):
            pass
    except OSError as exc:
        raise ClusterUnreachable(
            f"cannot reach the {what} at {named}: {exc.strerror or exc}. Is the cluster running, and is this its "
            "head's address (GCS port 6379 by default; ray:// uses the client port, 10001 by default)?"
        ) from None
    token = auth.metadata()
    try:
        _ask(target, token, seconds)
    except grpc.RpcError as exc:
        if exc.code() == grpc.StatusCode.UNAUTHENTICATED:
            raise ClusterUnreachable(auth.refused(f"the {what} at {named}", sent=bool(token))) from None
        raise ClusterUnreachable(
            f"{named} answers TCP but not as a {what} ({exc.code().name} within {seconds:g} s): check the port "
            "(the GCS port, 6379 by default; ray:// uses the client port, 10001 by default)"
        ) from None


def is_open(address: str) -> bool:
    """True when the cluster at ``address`` answers a call that carries no token: then every local user of every
    node, and anyone who reaches the nodes' addresses, can run code there as the cluster's user."""
    import grpc

    try:
        _ask(resolve(address), (), PROBE_SECONDS)
    except (grpc.RpcError, ClusterUnreachable):
        return False
    return True


def _ask(target: str, metadata: tuple, seconds: float) -> None:
    """One call to the GCS at ``target`` (its cluster ID), or a ping of the Ray Client server for ``ray://``."""
    import grpc

    host, port = host_port(target)
    channel = grpc.insecure_channel(f"{host}:{port}")
    try:
        if is_client(target):
            from ray.core.generated import ray_client_pb2, ray_client_pb2_grpc

            ping = ray_client_pb2.ClusterInfoRequest(type=ray_client_pb2.ClusterInfoType.PING)
            ray_client_pb2_grpc.RayletDriverStub(channel).ClusterInfo(ping, timeout=seconds, metadata=metadata)
        else:
            from ray.core.generated import gcs_service_pb2, gcs_service_pb2_grpc

            stub = gcs_service_pb2_grpc.NodeInfoGcsServiceStub(channel)
            stub.GetClusterId(gcs_service_pb2.GetClusterIdRequest(), timeout=seconds, metadata=metadata)
    finally:
        channel.close()


def _same_cluster(ray, address: str) -> bool:
    """True when the connection someone else made with ``ray.init()`` is to ``address``."""
    if is_client(address):
        return False
    try:
        return ray.get_runtime_context().gcs_address == resolve(address)
    except Exception:  # noqa: BLE001 - whatever the reason, it is not known to be the same cluster
        return False


def _is_loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host == "localhost"
