"""The detached process that runs one job's attempts on this node, each recorded as its own MLflow run."""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import threading
import time
import traceback
from dataclasses import dataclass
from typing import Optional

from . import procs
from .logs import MAX_LINE_BYTES, LogWriter, node_dir
from .store import Job, JobStore, now_ms

log = logging.getLogger("jupyter_air.workloads.supervisor")

#: Seconds between system-metrics samples of an attempt (a final sample is always logged at its end).
SYSTEM_METRICS_INTERVAL_SECONDS = float(os.environ.get("AIR_SYSTEM_METRICS_INTERVAL_SECONDS", "10"))
#: Seconds between checks for free GPUs while a job waits for its reservation.
_GPU_WAIT_POLL_SECONDS = 2.0
_MLFLOW_STATUS = {"SUCCEEDED": "FINISHED", "FAILED": "FAILED", "TIMED_OUT": "FAILED", "CANCELED": "KILLED"}


@dataclass
class Outcome:
    """How one attempt ended, as a job status."""

    status: str
    exit_code: Optional[int] = None
    error: Optional[str] = None


class Supervisor:
    """Reserves GPUs, runs attempts until one succeeds or retries run out, honours cancel and timeout."""

    def __init__(self, store: JobStore, job_run_id: str):
        self.store = store
        self.job_run_id = job_run_id
        self.cancel = threading.Event()
        self.client = None

    def run(self) -> int:
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, lambda *_: self.cancel.set())
        signal.signal(signal.SIGHUP, signal.SIG_IGN)
        job = self.store.get(self.job_run_id)
        try:
            outcome = self._run(job)
        except Exception as exc:  # noqa: BLE001 - any failure must end the job, not leave it RUNNING
            traceback.print_exc()
            outcome = Outcome("FAILED", error=f"supervisor error: {type(exc).__name__}: {exc}")
            self._end_open_attempts(outcome)
        self.store.finish(self.job_run_id, outcome.status, outcome.error, outcome.exit_code)
        return 0 if outcome.status == "SUCCEEDED" else 1

    def _run(self, job: Job) -> Outcome:
        if job.cancel_requested or self.cancel.is_set():
            return Outcome("CANCELED", error="canceled before it started")
        from jupyter_air.tracking.store import client, ensure_experiment

        self.client = client()
        spec = job.workload
        experiment_id = ensure_experiment(spec["experiment_name"], spec["mlflow_artifact_location"])
        self.store.update(self.job_run_id, experiment_id=experiment_id)
        gpus = self._reserve(spec["compute"]["num_accelerators"])
        if gpus is None:
            return Outcome("CANCELED", error="canceled while waiting for GPUs")
        outcome = Outcome("FAILED", error="no attempt ran")
        for attempt in range(job.max_retries + 1):
            if self.cancel.is_set():
                return Outcome("CANCELED", outcome.exit_code, f"canceled before attempt {attempt}")
            outcome = self._attempt(job, experiment_id, attempt, gpus)
            if outcome.status in ("SUCCEEDED", "CANCELED"):
                break
        return outcome

    def _reserve(self, count: int) -> Optional[list[int]]:
        """GPU indexes held for the whole job; waits (PENDING) while other jobs hold them."""
        if count == 0:
            return []
        from .gpus import node_gpus

        indexes = node_gpus().indexes
        while not self.cancel.is_set():
            chosen = self.store.reserve_gpus(self.job_run_id, count, indexes)
            if chosen is not None:
                return chosen
            if len(indexes) < count:
                raise RuntimeError(f"{count} GPU(s) requested but this node has {len(indexes)}")
            self.store.update(self.job_run_id, error=f"waiting for {count} free GPU(s) held by other jobs")
            self.cancel.wait(_GPU_WAIT_POLL_SECONDS)
        return None

    def _attempt(self, job: Job, experiment_id: str, attempt: int, gpus: list[int]) -> Outcome:
        from mlflow.entities import Param

        from jupyter_air.tracking.store import run_url, tracking_uri
        from jupyter_air.tracking.system_metrics import SystemMetrics

        spec = job.workload
        tags = {
            "air.job_run_id": self.job_run_id,
            "air.attempt": str(attempt),
            "mlflow.user": job.user,
            "mlflow.source.name": job.source,
            "mlflow.source.type": "JOB",
        }
        run = self.client.create_run(experiment_id, run_name=spec["mlflow_run_name"], tags=tags)
        run_id = run.info.run_id
        params = [Param(str(k), str(v)) for k, v in spec["parameters"].items()]
        if params:
            self.client.log_batch(run_id, params=params)
        self.store.start_attempt(self.job_run_id, attempt, run_id, run_url(experiment_id, run_id))
        env = {
            **os.environ,
            "PYTHONUNBUFFERED": os.environ.get("PYTHONUNBUFFERED", "1"),
            **spec["env_variables"],
            "MLFLOW_TRACKING_URI": tracking_uri(),
            "MLFLOW_EXPERIMENT_ID": experiment_id,
            "MLFLOW_RUN_ID": run_id,
            "AIR_JOB_RUN_ID": self.job_run_id,
            "AIR_ATTEMPT": str(attempt),
            "NODE_RANK": "0",
            "NUM_NODES": "1",
            "CUDA_VISIBLE_DEVICES": ",".join(str(i) for i in gpus),
        }
        directory = node_dir(self.store.job_dir(self.job_run_id), attempt, 0)
        writer = LogWriter(directory)
        proc = subprocess.Popen(
            spec["command"],
            shell=True,
            cwd=spec["code_source"]["root_path"],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        started = procs.start_time(proc.pid)
        self.store.update_attempt(self.job_run_id, attempt, pid=proc.pid, pid_started=started)
        if attempt == 0:
            self.store.update(self.job_run_id, status="RUNNING", started_ms=now_ms(), error=None)
        pump = threading.Thread(target=_pump, args=(proc.stdout, writer), daemon=True)
        pump.start()
        with SystemMetrics(run_id, interval_seconds=SYSTEM_METRICS_INTERVAL_SECONDS):
            outcome = self._wait(proc, started, spec.get("timeout_minutes"), attempt)
            procs.stop_tree(proc.pid, started, grace_seconds=2)  # background children the command left
        pump.join(10)
        writer.close()
        self.client.log_artifacts(run_id, str(directory), artifact_path=f"logs/attempt_{attempt}/node_0")
        self.client.set_terminated(run_id, _MLFLOW_STATUS[outcome.status])
        self.store.update_attempt(
            self.job_run_id,
            attempt,
            status=_MLFLOW_STATUS[outcome.status],
            ended_ms=now_ms(),
            exit_code=outcome.exit_code,
            error=outcome.error,
        )
        return outcome

    def _wait(self, proc: subprocess.Popen, started: Optional[float], timeout_minutes, attempt: int) -> Outcome:
        deadline = time.monotonic() + timeout_minutes * 60 if timeout_minutes else None
        while True:
            try:
                code = proc.wait(timeout=0.1)
                break
            except subprocess.TimeoutExpired:
                pass
            if self.cancel.is_set():
                return Outcome("CANCELED", _stop(proc, started), f"attempt {attempt} canceled")
            if deadline is not None and time.monotonic() > deadline:
                code = _stop(proc, started)
                return Outcome("TIMED_OUT", code, f"attempt {attempt} ran past timeout_minutes={timeout_minutes}")
        if code == 0:
            return Outcome("SUCCEEDED", 0)
        if code < 0:
            return Outcome("FAILED", code, f"command killed by {signal.Signals(-code).name}")
        return Outcome("FAILED", code, f"command exited with code {code}")

    def _end_open_attempts(self, outcome: Outcome) -> None:
        job = self.store.get(self.job_run_id)
        for attempt in job.attempts:
            if attempt.ended_ms is not None:
                continue
            if attempt.pid:
                procs.stop_tree(attempt.pid, attempt.pid_started)
            self.store.update_attempt(
                self.job_run_id, attempt.attempt, status="FAILED", ended_ms=now_ms(), error=outcome.error
            )
            if self.client is not None and attempt.mlflow_run_id:
                try:
                    self.client.set_terminated(attempt.mlflow_run_id, "FAILED")
                except Exception as exc:  # noqa: BLE001 - the store itself may be what failed
                    log.warning("Could not end MLflow run %s: %s", attempt.mlflow_run_id, exc)


def _stop(proc: subprocess.Popen, started: Optional[float]) -> Optional[int]:
    """Stop the attempt's process tree; the command's exit status (negative: the signal that ended it)."""
    codes = procs.stop_tree(proc.pid, started)
    return codes.get(proc.pid, proc.poll())


def _pump(stream, writer: LogWriter) -> None:
    for line in iter(lambda: stream.readline(MAX_LINE_BYTES), b""):
        writer.write(line)
    stream.close()


def main(argv: list[str]) -> None:
    """Entry point of the detached supervisor: `<python> -c ... JOB_RUN_ID` (see LocalExecutor)."""
    from jupyter_air.tracking.store import air_home

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    raise SystemExit(Supervisor(JobStore(air_home()), argv[0]).run())
