"""A workload a user sends to the team's job service (``POST jobs``): checked as ``air run`` checks a file, plus
what the service must not do for the caller (write to a local folder they name, log to an experiment they may not
log to, join a Ray cluster they name and send it the service's token), then run as the caller's job through the one
job path, or, with a ``schedule:``, kept as the caller's schedule, which the service fires."""

from __future__ import annotations

import re
from pathlib import Path

from jupyter_air.cluster.address import configured_address
from jupyter_air.cluster.errors import BadAddress
from jupyter_air.error_kinds import BAD_INPUT, ErrorKind
from jupyter_air.tracking.sharing import ShareError, claim
from jupyter_air.workloads.file.loader import WorkloadError, load_workload
from jupyter_air.workloads.jobs.jobs import SubmitError
from jupyter_air.workloads.schedules.schedules import keep
from jupyter_air.workloads.surfaces.jobs_view import JobsView

_SHAPE = 'send {"workload": "<the YAML>", "path": "<the file\'s absolute path>", "label": "<its name>"}'
#: A URI of a store the service writes to over the network (``s3://``, ``gs://``, ``mlflow-artifacts://``...).
_REMOTE = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*)://")
_LOCAL = (
    "a local folder, where the team's job service would write for you (a file: URI or a path). The service takes "
    "a URI of a remote artifact store (s3://bucket/path, gs://...): give one, or leave the field out for the "
    "tracking server's default"
)


def submit_sent(view: JobsView, body: dict) -> dict:
    """Run ``body``'s workload (``workload``: its YAML, ``path``: the absolute path it was read from on the shared file
    system, where its relative paths point, ``label``: its name in problems, ``overrides``: `air run`'s) as the
    caller's job; the caller's hub token (``view.token``) checks the experiment as them. What ``get`` answers for
    the new job, or ``{"created", "schedule"}`` for a schedule (another user's of that name is Forbidden);
    SubmitError (every problem) and nothing created otherwise."""
    text, path, label, overrides = (body.get(k) for k in ("workload", "path", "label", "overrides"))
    overrides = [] if overrides is None else overrides
    strings = [text, path, label, *(overrides if isinstance(overrides, list) else [None])]
    if not all(isinstance(v, str) and v and "\0" not in v for v in strings) or not Path(path).is_absolute():
        raise SubmitError(f"cannot run the workload: {_SHAPE}", [_SHAPE])
    try:
        loaded = load_workload(path, tuple(overrides), label=label, text=text)
    except WorkloadError as err:
        raise SubmitError(str(err), err.problems) from None
    sent = loaded.as_dict()
    if problem := _other_cluster(sent["compute"].get("ray_address")):  # before any connection to it
        where = loaded.locate(problem, label)
        raise SubmitError(f"invalid workload {label}:\n  {where}", [where])
    resolved = view.jobs.resolve(sent, source=str(loaded.source), label=label, locate=loaded.locate)
    workload = resolved.workload
    location = workload.get("mlflow_artifact_location")
    if location and not _remote(location):
        _refuse(label, f"mlflow_artifact_location: {location!r} is {_LOCAL}")

    try:
        claim(workload["experiment_name"], view.jobs.owner, view.token or "", location)
    except ShareError as err:
        _refuse(label, f"experiment_name: {err}", err.kind)
    if "schedule" in workload:
        return keep(view.jobs, resolved, view.jobs.owner)
    return view.detail(view.jobs.start(resolved))


def _other_cluster(address: str | None) -> str | None:
    """``compute.ray_address: why`` when a workload names a Ray cluster other than the service's own
    (``$AIR_RAY_ADDRESS``): joining it would send that cluster the service's Ray token. None when it names none."""
    try:
        own = configured_address()
    except BadAddress:
        own = None
    if address is None or address == own:
        return None
    if own is None:
        return (
            f"compute.ray_address: {address!r}: the team's job service has no Ray cluster (its admins give it one "
            "as AIR_RAY_ADDRESS in its environment) and joins no cluster a workload names, which would be sent its "
            "Ray token; remove compute.ray_address to run on the service's machine"
        )
    return (
        f"compute.ray_address: {address!r} is not the team's Ray cluster: the job service runs jobs only on its own "
        f"({own}), never on a cluster a workload names, which would be sent its Ray token; remove "
        "compute.ray_address (a workload with compute.num_nodes above 1, or more GPUs than a machine has, goes there)"
    )


def _remote(location: str) -> bool:
    """True for a URI of a store reached over the network: a scheme, ``://``, and not ``file``."""
    found = _REMOTE.match(location)
    return found is not None and found.group(1).lower() != "file"


def _refuse(label: str, why: str, kind: ErrorKind = BAD_INPUT) -> None:
    raise SubmitError(f"invalid workload {label}:\n  {label}: {why}", [f"{label}: {why}"], kind)
