"""A local call's GPUs, taken from this machine's GPU ledger: the one AIR_HOME's jobs take theirs from (on a team's
hub, ``AIR_JOBS_URL`` set, the air-jobs service's, which the team's jobs and every user's calls share), so a call
and a job (or two calls) never run on the same GPU, and a call whose GPUs are busy waits its turn in line. A call on
a Ray cluster is admitted the same way to the cluster's pool of the ledger before it asks Ray for its GPUs."""

from __future__ import annotations

import functools
import getpass
import os
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from jupyter_air.home import air_home
from jupyter_air.training.errors import DistributedError
from jupyter_air.workloads.state.fair_share import Claim
from jupyter_air.workloads.state.ledger import Admission, GpuLedger
from jupyter_air.workloads.state.store import JobStore
from jupyter_air.workloads.supervisor.gpus import cuda_environment, node_gpus
from jupyter_air.workloads.surfaces.team_jobs import ServiceAnswer, ServiceJobs

#: Seconds between looks at the ledger while a call waits for its GPUs.
POLL_SECONDS = 1.0


class GpusBusy(DistributedError):
    """A call with ``wait=False`` found its GPUs held: it did not start (the message says who holds them)."""


@dataclass(frozen=True)
class HeldGpus:
    """The GPUs a call holds (none on a machine without GPUs), until :meth:`release`."""

    gpus: tuple[int, ...] = ()
    ledger: GpuLedger | ServiceLedger | None = None
    claim_id: str = ""

    @property
    def environment(self) -> dict[str, str]:
        """What the ranks see: exactly the GPUs held."""
        return cuda_environment(self.gpus)

    def release(self) -> None:
        if self.ledger is not None:
            self.ledger.release(self.claim_id)


def take(asked: int | None, used: int, label: str, wait: bool, note: Callable[[str], None]) -> HeldGpus:
    """The GPUs of this machine a call known as ``label`` runs on: ``used``, the GPUs its ranks drive (none for CPU
    ranks, which hold no GPU). On the ``simulated`` source of a demo, whose GPUs no rank can drive, the call
    claims what it ``asked`` for (every GPU when None), as it would on real ones, so the queue can be tried.
    Waits its turn while they are held (saying so with ``note``), or with ``wait=False`` raises :class:`GpusBusy`."""
    node = node_gpus()
    indexes = usable_indexes(node.indexes)
    count = (asked or len(indexes)) if node.source == "simulated" else used
    if not indexes or not count:
        return HeldGpus()
    return hold(call_claim(label, count), indexes, wait, note)


def cluster_admission(label: str, wait: bool) -> Callable[[int, str, int, Callable[[str], None]], HeldGpus]:
    """How a call known as ``label`` is admitted to a Ray cluster's GPUs: ``admit(count, pool, size, note)`` holds
    ``count`` of the ``size`` GPUs of the cluster's ``pool`` in the ledger before the call asks Ray for them (Ray
    then places them); it waits its turn like a call on this machine."""

    def admit(count: int, pool: str, size: int, note: Callable[[str], None]) -> HeldGpus:
        held = hold(call_claim(label, count, pool), range(size), wait, note)
        return HeldGpus((), held.ledger, held.claim_id)  # Ray says which GPUs each rank sees

    return admit


def call_claim(label: str, count: int, pool: str = "") -> Claim:
    return Claim(f"call-{uuid.uuid4().hex[:12]}", "call", getpass.getuser(), label, count, pool=pool)


def hold(claim: Claim, indexes: Sequence[int], wait: bool, note: Callable[[str], None]) -> HeldGpus:
    """``claim`` held among ``indexes`` once its turn comes, from this machine's ledger (the team's on a hub)."""
    service = ServiceJobs.from_environment()
    ledger = _ledger(air_home()) if service is None else ServiceLedger(service)
    try:
        while True:
            admission = ledger.claim(claim, list(indexes))
            if admission.gpus is not None:
                return HeldGpus(admission.gpus, ledger, claim.claim_id)
            if not wait:
                raise GpusBusy(f"the call did not start (wait=False): {admission.reason}")
            note(f"waiting for GPUs: {admission.reason}")
            time.sleep(POLL_SECONDS)
    except BaseException:
        ledger.release(claim.claim_id)  # an interrupt, a refusal: nothing stays queued
        raise


class ServiceLedger:
    """The team's ledger, kept by the air-jobs service: claims as this hub user, held while this process lives."""

    def __init__(self, service: ServiceJobs):
        self.service = service

    def claim(self, claim: Claim, indexes: list[int]) -> Admission:
        body = {"claim_id": claim.claim_id, "label": claim.label, "count": claim.count, "indexes": indexes}
        body.update({"pool": claim.pool} if claim.pool else {})
        answer = self.service.call("POST", "gpus/claims", {**body, "pid": os.getpid()})
        gpus = answer["gpus"]
        return Admission(None if gpus is None else tuple(gpus), answer["position"], answer["reason"])

    def release(self, claim_id: str) -> None:
        """End the claim; one the service never queued (its request refused) is none to end."""
        try:
            self.service.call("DELETE", f"gpus/claims/{claim_id}")
        except ServiceAnswer as answer:
            if answer.status != 404:
                raise


@functools.cache
def _ledger(home: Path) -> GpuLedger:
    """AIR_HOME's ledger, its store opened (tables checked) once per kernel."""
    return GpuLedger(JobStore(home))


def usable_indexes(indexes: list[int]) -> list[int]:
    """Those of this machine's GPUs (``indexes``, the GPU source's) that a call may take: the kernel's
    CUDA_VISIBLE_DEVICES limits them."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is None or not all(part.strip().isdigit() for part in visible.split(",") if part.strip()):
        return indexes  # unset, or named by UUID: every GPU of the source
    named = {int(part) for part in visible.split(",") if part.strip()}
    return [i for i in indexes if i in named]
