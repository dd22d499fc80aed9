"""Which host each node is on, and refusing a tracking store that the nodes' hosts cannot all reach."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from .errors import TrackingUnreachable

#: Node label naming the machine a Ray node runs on (``ray start --labels='{"air.io/host": "gpu-07"}'``).
#: Without it a node's host is its IP address; several Ray nodes on one machine share it.
HOST_LABEL = "air.io/host"


def host_of(labels: Mapping[str, str] | None, ip: str) -> str:
    """The host key of a node: its ``air.io/host`` label, else its IP address."""
    return (labels or {}).get(HOST_LABEL) or ip


def driver_host() -> str | None:
    """The host key of this process's own Ray node; None in Ray Client mode (this machine is no node)."""
    import ray

    if ray.util.client.ray.is_connected():
        return None
    node_id = ray.get_runtime_context().get_node_id()
    for node in ray.nodes():
        if node["NodeID"] == node_id:
            return host_of(node.get("Labels"), node["NodeManagerAddress"])
    return None


def check_tracking(node_hosts: Iterable[str], here: str | None, uri: str, what: str) -> None:
    """Refuse a non-HTTP tracking URI when ``node_hosts`` and this process's host ``here`` are not one machine."""
    if uri.startswith(("http://", "https://")):
        return
    hosts = sorted(set(node_hosts))
    if len(hosts) == 1 and here == hosts[0]:
        return
    where = f"{len(hosts)} host(s) ({', '.join(hosts)})" + ("" if here in hosts else " besides this machine")
    raise TrackingUnreachable(
        f"{what} would run on {where}, but MLflow's tracking URI is {uri}: a file or database on one machine "
        "cannot be written from the others, so their runs would be lost. Start a shared MLflow tracking server "
        "(mlflow server --backend-store-uri postgresql://... --serve-artifacts --host 0.0.0.0 --port 5000) and set "
        "MLFLOW_TRACKING_URI=http://<its host>:5000 where this runs, then try again."
    )
