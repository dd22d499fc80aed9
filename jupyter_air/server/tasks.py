"""Background work of the server extension, off the event loop's way: firing due schedules, failing jobs whose
supervisor died, starting the embedded MLflow UI once its store exists (and keeping it up), finding kernels idle on
GPU memory."""

from __future__ import annotations

import asyncio
import logging
import time
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

from tornado.ioloop import IOLoop, PeriodicCallback

from jupyter_air.workloads.jobs.jobs import Jobs
from jupyter_air.workloads.schedules.schedules import Schedules
from jupyter_air.workloads.schedules.tick import tick
from jupyter_air.workloads.state.kept_results import forget_old_results

from ..gpu.cluster import ClusterUnavailable
from ..gpu.idle import KernelView
from ..home import AirHomeError, UnusableDatabase, air_home_path, checked_air_home
from ..tracking.resident import idle_seconds
from ..tracking.stops import reap_dead_runs

#: Seconds between two looks for the embedded store (a stat call), to start its UI soon after the first run, and
#: between two looks at whether the UI still runs.
UI_CHECK_SECONDS = 1.0
#: Seconds between two reports of the same problem with the jobs under AIR_HOME while it lasts.
REPEAT_SECONDS = 600
#: Seconds between two health requests to the UI: far less than the shortest sensible idle stop.
UI_KEEP_ALIVE_SECONDS = 60.0


class JobChecks:
    """Every ``interval_seconds``, on a worker thread: reap the jobs under AIR_HOME whose supervisor is gone, fire
    the schedules that are due (one driver among any number: each fire time is claimed once), and end the runs of
    kernels that died mid-run. A schedule due before the next check wakes a check at its due time, so fires start
    on time whatever the interval.

    The one place a server reaps jobs (the panel's reads never do); the `air` command does it where no server runs.
    A problem that lasts (a damaged job database, a full disk) is logged once, in one line, then again every
    :data:`REPEAT_SECONDS` while it lasts, and once more when the checks work again.
    """

    def __init__(self, interval_seconds: float, log: logging.Logger):
        self.log = log
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="jupyter-air-jobs")
        self._running: Future | None = None
        self._jobs = None  # the Jobs of AIR_HOME, kept: its job store stays open once the database exists
        self._interval = interval_seconds
        self._callback = PeriodicCallback(self._check, interval_seconds * 1000)
        self._loop: IOLoop | None = None
        self._wake: object | None = None  # the timeout of a check at the next due time
        self._again = False
        self._problem: str | None = None
        self._reported_at = 0.0

    def start(self) -> None:
        self._loop = IOLoop.current()
        self._callback.start()
        self._loop.add_callback(self._check)  # schedules due at start-up fire now, not one interval later

    def stop(self) -> None:
        self._callback.stop()
        if self._wake is not None:
            self._loop.remove_timeout(self._wake)
        self._executor.shutdown(wait=True, cancel_futures=True)

    def _wake_at(self, due_ms: int) -> None:
        """Check at ``due_ms`` (a schedule's next fire time) when that comes before the next periodic check."""
        if self._wake is not None:
            self._loop.remove_timeout(self._wake)
            self._wake = None
        delay = max(0.0, due_ms / 1000 - time.time())
        if delay < self._interval and self._callback.is_running():
            self._wake = self._loop.call_later(delay, self._check)

    def _check(self) -> None:
        if self._running is not None and not self._running.done():
            self._again = True  # the previous check (stopping a workload, uploading its logs) is still at work
            return
        self._again = False
        self._running = self._executor.submit(self._check_home)
        self._running.add_done_callback(lambda _: self._loop.add_callback(self._check_again))

    def _check_again(self) -> None:
        """A check asked for while the previous one ran (a schedule's due time among them) runs once it ends."""
        if self._again and self._callback.is_running():
            self._check()

    def _check_home(self) -> None:
        """One check of AIR_HOME, its steps in this order; a problem that lasts is reported (``_report``), not
        raised."""
        home = air_home_path()
        try:
            checked_air_home()  # another user's job database or run records are never acted on
            if self._jobs is None or self._jobs.home != home:
                self._jobs = Jobs(home)  # never creates the job database
            self._end_dead_jobs()
            self._fire_due_schedules()  # after the reap: a dead job no longer counts against max_concurrent_runs
            self._end_dead_kernels_runs(home)
            self._forget_old_results(home)
        except (UnusableDatabase, AirHomeError) as err:  # a broken or foreign AIR_HOME: one line, not a flood
            self._report(f"the jobs under AIR_HOME cannot be checked: {err}", traceback=False)
        except Exception as exc:  # noqa: BLE001 - the checks go on; the traceback is logged (rate-limited)
            self._report(f"checking the jobs under {home} failed: {type(exc).__name__}: {exc}", traceback=True)
        else:
            if self._problem is not None:
                self.log.info("jupyter_air: the jobs under %s are checked again.", home)
                self._problem = None

    def _end_dead_jobs(self) -> None:
        for job_run_id in self._jobs.reap():
            self.log.warning("jupyter_air: job %s failed: its supervisor is gone.", job_run_id)

    def _fire_due_schedules(self) -> None:
        """Fire what is due, and wake a check at the next due time."""
        for fire in tick(self._jobs):
            self.log.info("jupyter_air: schedule %s fired: %s %s", fire.name, fire.outcome, fire.job_run_id or "")
        due = Schedules(self._jobs).next_due_ms()
        if due is not None:
            self._loop.add_callback(self._wake_at, due)

    def _end_dead_kernels_runs(self, home: Path) -> None:
        for run_id in reap_dead_runs(home):
            self.log.warning("jupyter_air: MLflow run %s failed: its kernel died.", run_id)

    def _forget_old_results(self, home: Path) -> None:
        if (home / "jobs").is_dir():
            for folder in forget_old_results(home / "jobs"):
                self.log.info("jupyter_air: deleted the results of an old remote call, %s.", folder)

    def _report(self, problem: str, traceback: bool) -> None:
        now = time.monotonic()
        if problem == self._problem and now - self._reported_at < REPEAT_SECONDS:
            return
        self._problem, self._reported_at = problem, now
        self.log.warning(
            "jupyter_air: %s (said again in %d minutes if it lasts)", problem, REPEAT_SECONDS // 60, exc_info=traceback
        )


class UiAutostart:
    """Starts the MLflow UI (``ui_process.MlflowUi``, AIR_HOME's resident MLflow server) as soon as its store
    exists, and keeps it up while this server runs: started again when gone (after a failed start, once its
    backoff allows or its store file changed: ``ui_retry``), and asked for its health every
    ``UI_KEEP_ALIVE_SECONDS`` so that it never stops as idle (kernels then find it at their first call)."""

    def __init__(self, ui):
        self.ui = ui
        self._callback = PeriodicCallback(self._check, UI_CHECK_SECONDS * 1000)
        self._asked = 0.0

    def start(self) -> None:
        self._callback.start()

    def stop(self) -> None:
        self._callback.stop()

    async def _check(self) -> None:
        if not self.ui.running:
            await self.ui.start_if_store_exists()
        elif time.monotonic() - self._asked >= min(UI_KEEP_ALIVE_SECONDS, idle_seconds() / 3):
            self._asked = time.monotonic()
            await asyncio.to_thread(self.ui.server.answers)


class IdleHolderChecks:
    """Every ``interval_seconds``, whether or not a panel is open: which kernels sit idle on GPU memory
    (:class:`~jupyter_air.gpu.idle.IdleHolders`). Kernels are read on the event loop; the GPUs off it, from the
    sampler's samples while it samples, else by one reading of its own that leaves sampling stopped. With a Ray
    ``cluster``, also the nodes running the kernels' actors, each from its own sampler, the same way."""

    def __init__(
        self, holders, sampler, kernel_manager, session_manager, interval_seconds: float, log, cluster=None, use=None
    ):
        self.holders = holders
        self.use = use  # an IdleUse: what idle kernels hold counts as their user's GPU use
        self.sampler = sampler
        self.cluster = cluster
        self._nodes_since: dict[str, int | None] = {}  # Ray node id -> the newest sample of it a check used
        self.kernel_manager = kernel_manager
        self.session_manager = session_manager
        self.log = log
        self._last_ms: int | None = None
        self._running = False
        self._failing = False
        self._nodes_failing = False
        self._callback = PeriodicCallback(self._check, interval_seconds * 1000)

    def start(self) -> None:
        self._callback.start()

    def stop(self) -> None:
        self._callback.stop()

    async def _check(self) -> None:
        if self._running:
            return
        self._running = True
        try:
            kernels = await self._kernels()
            nodes = await self._nodes(kernels)
            await asyncio.to_thread(self._check_gpus, kernels, nodes)
            if self._failing:
                self.log.info("jupyter_air: the idle GPU holder check works again.")
                self._failing = False
        except Exception as exc:  # the check goes on; said once while it fails
            if not self._failing:
                self.log.warning("jupyter_air: the idle GPU holder check failed: %s", exc, exc_info=True)
                self._failing = True
        finally:
            self._running = False

    def _check_gpus(self, kernels, nodes) -> None:
        samples = self.sampler.readings_since(self._last_ms)
        if samples:
            self._last_ms = samples[-1][0]
        now = time.time()
        holders = self.holders.check(samples, kernels, now, nodes)
        if self.use is not None:
            self.use.record(holders, int(now * 1000))

    async def _nodes(self, kernels) -> list:
        """The Ray nodes' part of this check; none while the cluster cannot be joined (the GPU panel says why) or
        its tables cannot be read (said once while it lasts): this server's own node is checked all the same."""
        if self.cluster is None:
            return []
        try:
            nodes = await self.cluster.holdings({k.pid: k.kernel_id for k in kernels if k.pid}, self._nodes_since)
            self._nodes_failing = False
        except ClusterUnavailable:
            nodes = []
        except Exception as exc:  # noqa: BLE001 - a Ray error must not blind the check of this node
            if not self._nodes_failing:
                self.log.warning("jupyter_air: the idle GPU holder check of the Ray nodes failed: %s", exc)
                self._nodes_failing = True
            nodes = []
        since = {n.node_id: n.samples[-1][0] for n in nodes if n.samples}
        self._nodes_since = {n.node_id: since.get(n.node_id, self._nodes_since.get(n.node_id)) for n in nodes}
        return nodes

    async def _kernels(self) -> list:
        sessions = await self.session_manager.list_sessions()
        paths = {s["kernel"]["id"]: s.get("path") for s in sessions if s.get("kernel")}
        views = []
        for kernel_id in self.kernel_manager.list_kernel_ids():
            kernel = self.kernel_manager.get_kernel(kernel_id)
            activity = getattr(kernel, "last_activity", None)
            views.append(
                KernelView(
                    kernel_id,
                    getattr(getattr(kernel, "provisioner", None), "pid", None),
                    paths.get(kernel_id),
                    activity.timestamp() if activity is not None else time.time(),
                    getattr(kernel, "execution_state", None) == "busy",  # "starting" until a client asks it
                )
            )
        return views
