"""Which Ray actors work for which driver process: read from the GCS's job and actor tables.

Ray's public state API (``ray.util.state``) answers this through the dashboard, which a cluster may run without;
the GCS tables are read through ``ray._private.state``, the accessor ``ray.nodes()`` itself uses. Needs a Ray
connection made in this process (not Ray Client).
"""

from __future__ import annotations


def actors_by_node(drivers: dict[int, str], driver_ip: str | None) -> dict[str, dict[int, str]]:
    """``{node id: {actor pid: label}}`` of the live actors of the live Ray jobs whose driver is one of ``drivers``
    (``{pid: label}``) on the machine at ``driver_ip`` (any machine when None)."""
    import ray
    from ray._private import state

    jobs = {
        job["JobID"]: drivers[job["DriverPid"]]
        for job in state.jobs()
        if not job["IsDead"] and job["DriverPid"] in drivers and driver_ip in (None, job["DriverIPAddress"])
    }
    found: dict[str, dict[int, str]] = {}
    for job_id, label in jobs.items():
        for actor in state.actors(job_id=ray.JobID.from_hex(job_id), actor_state_name="ALIVE").values():
            if actor.get("Pid"):
                found.setdefault(actor["Address"]["NodeID"], {})[actor["Pid"]] = label
    return found
