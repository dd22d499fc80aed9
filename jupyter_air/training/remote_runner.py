"""A notebook call run as a job (``.distributed(remote=True)``): the attempt runner the supervisor uses for ``kind:
call`` workloads, here (its fork server) or on Ray nodes (:class:`~jupyter_air.training.ray_call.ClusterCall`).

The kernel leaves the packed call in the job's folder (:data:`PAYLOAD`, :data:`CONTEXT`); each attempt writes its
ranks' lines, ``[rank N]``-prefixed, to the job's per-node logs (where ``air logs``, the Logs view and an attached
kernel read them), and at its end each rank's pickled result (at most :data:`MAX_RESULT_BYTES` in all) or the
failure (:data:`OUTCOME`) for the kernel that attaches.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import threading
from collections.abc import Callable
from pathlib import Path

from jupyter_air.home import private_dir
from jupyter_air.training.errors import DistributedError
from jupyter_air.training.forkserver_client import Launcher
from jupyter_air.training.gpu_claim import HeldGpus
from jupyter_air.training.launch_plan import NodePlace
from jupyter_air.training.logs import RankLogTail
from jupyter_air.training.node_call import Call
from jupyter_air.training.options import RunOptions
from jupyter_air.training.outcome_file import OUTCOME, write_outcome
from jupyter_air.training.parked import Parked
from jupyter_air.training.ray_call import ClusterCall
from jupyter_air.workloads.state.kept_results import RESULTS
from jupyter_air.workloads.state.logs import LogWriter, node_dir
from jupyter_air.workloads.supervisor.gpus import cuda_environment
from jupyter_air.workloads.supervisor.runners import AttemptContext, reserve_gpus

#: Files of a call job's folder: the packed function and arguments, the caller's import path and folder.
PAYLOAD, CONTEXT = "payload.pkl", "context.json"
#: Most bytes of pickled results a call keeps for the kernel; bigger results belong in the run's artifacts.
MAX_RESULT_BYTES = 100 << 20


class CallRunner:
    """One attempt of a call job: its ranks on this node (``place == "local"``) or on Ray nodes (``"ray"``)."""

    pid: int | None = None
    started: float | None = None

    def __init__(self, context: AttemptContext, place: str):
        self.context = context
        self.place_name = place
        self.spec = context.spec["call"]
        self.call = None
        self.problem: str | None = None
        self.nodes: list[dict] | None = None
        self.log_dirs: list[Path] = []
        self._writers: list[LogWriter] = []
        self._tail: RankLogTail | None = None
        self._node_of: list[int] = []
        self.gpus: list[int] = []

    def place(self, cancel: threading.Event, note: Callable[[str], None]) -> bool:
        """Reserve this machine's GPUs (local) or the Ray nodes, and start the ranks: they wait for :meth:`start`."""
        job_dir = self.context.job_dir
        payload = (job_dir / PAYLOAD).read_bytes()
        context = json.loads((job_dir / CONTEXT).read_text())
        (job_dir / OUTCOME).unlink(missing_ok=True)
        if self.place_name == "local":
            gpus = reserve_gpus(self.context, cancel, note)
            if gpus is None:
                return False
            self.gpus = gpus
            os.environ.update(cuda_environment(gpus))  # the fork server counts these
            Launcher.from_zygote = True  # forked by AIR_HOME's zygote, as a kernel's: torch is imported there
            self.call = Call(payload, context, NodePlace(self.spec["world_size"]), parent=job_dir)
        else:
            options = RunOptions.of(self.spec["options"])
            address = self.context.spec["compute"]["ray_address"]
            admit = functools.partial(self._admit, cancel)
            self.call = ClusterCall(payload, context, options, address, admit, keep=Parked)
        if not self.call.start(note):
            return False
        files = list(self.call.log_files().values())  # node by node, each {global rank: log}
        self._node_of = [node for node, ranks in enumerate(files) for _ in ranks]
        self.log_dirs = [self._node_dir(node) for node in range(len(files))]
        self._writers = [LogWriter(d) for d in self.log_dirs]
        self._tail = RankLogTail([path for ranks in files for _, path in sorted(ranks.items())])
        if self.place_name == "ray":
            self.nodes = [info.to_json() for info in self.call.group.infos]
        return True

    def _admit(self, cancel: threading.Event, count: int, pool: str, size: int, note) -> HeldGpus | None:
        """The cluster's GPUs held as the job's own claim (ended with the job, whatever its attempts)."""
        return None if reserve_gpus(self.context, cancel, note, count, pool, range(size)) is None else HeldGpus()

    def _node_dir(self, node: int) -> Path:
        return node_dir(self.context.job_dir, self.context.attempt, node)

    def start(self, overrides: dict[str, str], run) -> None:
        """Let the ranks run in the attempt's run; this node samples its system metrics into it (Ray nodes sample
        their own)."""
        self.call.release(overrides)
        for key, value in getattr(self.call, "tags", {}).items():  # where a cluster call landed
            run.client.set_tag(run.run_id, key, value)
        if self.place_name == "local" and self.spec.get("log_system_metrics", True):
            run.start_system_metrics(gpus=[str(i) for i in self.gpus])  # with the energy of the call's GPUs

    def wait(self, timeout: float) -> int | None:
        """0 once every rank returned (their results kept), 1 when the call failed (:attr:`problem` says why)."""
        self.call.join(timeout)
        self._copy_lines()
        if self.call.running:
            return None
        try:
            self._keep(self._result_bytes())
        except DistributedError as err:
            self._keep_failure(err)
            return 1
        return 0

    def _result_bytes(self) -> list[bytes]:
        """Each rank's pickled result by global rank; raises the call's DistributedError."""
        if hasattr(self.call, "result_bytes"):  # this node's ranks: already pickled
            return [blob for _, blob in sorted(self.call.result_bytes().items())]
        import cloudpickle

        return [cloudpickle.dumps(value) for value in self.call.results()]

    def stop(self, grace_seconds: float = 5.0) -> int | None:
        self.call.stop()
        self._copy_lines()
        return None

    def finish(self) -> None:
        if self.call is None:
            return
        call, self.call = self.call, None
        try:
            call.stop()
            if self._tail is not None:
                self._copy_lines(final=True)
            for node, ranks in enumerate(call.log_files().values()):  # each rank's own log, kept with the run
                for path in ranks.values():
                    if node < len(self.log_dirs) and path.is_file():
                        shutil.copyfile(path, self.log_dirs[node] / path.name)
        finally:
            for writer in self._writers:
                writer.close()
            call.cleanup()
            if self.place_name == "local":
                Launcher.close()  # the supervisor exits next: its fork server ends with the attempt

    def _copy_lines(self, final: bool = False) -> None:
        for rank, line in self._tail.pump(final=final):
            self._writers[self._node_of[rank]].write(f"[rank {rank}] {line}".encode())

    def _keep(self, data: list[bytes]) -> None:
        """Each rank's pickled result for the kernel, or a failure when they are too big to keep."""
        size = sum(map(len, data))
        if size > MAX_RESULT_BYTES:
            raise DistributedError(
                f"the ranks returned {size / 2**20:.0f} MiB of results; a remote call keeps at most "
                f"{MAX_RESULT_BYTES >> 20} MiB. Log big results as the run's artifacts (mlflow.log_artifact) and "
                "return their path instead"
            )
        folder = private_dir(self.context.job_dir / RESULTS)
        for rank, blob in enumerate(data):
            (folder / f"rank_{rank}.pkl").write_bytes(blob)
        write_outcome(self.context.job_dir, {"status": "ok", "ranks": len(data)})

    def _keep_failure(self, err: DistributedError) -> None:
        fields = ("rank", "node", "exitcode", "exception_type", "exception_message", "worker_traceback")
        failure = {name: getattr(err, name) for name in fields}
        failures = {str(rank): text for rank, text in err.failures.items()}
        outcome = {"status": "failed", "message": err.args[0], **failure, "failures": failures}
        write_outcome(self.context.job_dir, outcome)
        self.problem = f"DistributedError: {err.args[0]}"


#: The ``call`` kind of work, plugged into the supervisor through the ``jupyter_air.kinds`` entry point:
#: ``{place: runner factory}`` (:mod:`jupyter_air.workloads.supervisor.kinds`).
RUNNERS = {"local": lambda context: CallRunner(context, "local"), "ray": lambda context: CallRunner(context, "ray")}
