"""``@distributed``: run a function on every GPU of the node (or of several Ray nodes) as one tracked MLflow run."""

from __future__ import annotations

import dataclasses
import functools
import inspect
import time

from jupyter_air.cluster.address import RAY_ADDRESS_ENV, configured_address
from jupyter_air.run_card.card import card_mode, gpus_in_use
from jupyter_air.run_card.starting import StartingCard
from jupyter_air.tracking.naming import FUNCTION_TAG, GPUS_TAG, SOURCE_TAG, WORLD_SIZE_TAG
from jupyter_air.training import gpu_claim, remote, runs, warmup
from jupyter_air.training.errors import CallInterrupted, CallStopped, DistributedError, DistributedTimeout
from jupyter_air.training.forkserver_client import Launcher
from jupyter_air.training.gpu_claim import HeldGpus
from jupyter_air.training.launch_plan import NodePlace, world_size_for
from jupyter_air.training.logs import RankLogTail
from jupyter_air.training.node_call import Call
from jupyter_air.training.options import RunOptions
from jupyter_air.training.pickling import call_context, pack
from jupyter_air.training.ray_call import ClusterCall
from jupyter_air.training.tracked import STOPPED, TrackedRun

#: Seconds between looks at the workers' logs and the launcher while a call runs.
_POLL_SECONDS = 0.1


def _wait(call: Call | ClusterCall, tail: RankLogTail, run: TrackedRun, timeout: float | None) -> None:
    deadline = None if timeout is None else time.monotonic() + timeout
    while call.running:
        call.join(_POLL_SECONDS)
        run.show_lines(tail.pump())
        if run.stop_requested():
            raise CallStopped(STOPPED)  # the caller stops every process, as for an interrupt
        if deadline is not None and time.monotonic() > deadline and call.running:
            call.stop()
            raise DistributedTimeout(
                f"the call ran longer than timeout={timeout} s; every worker was stopped."
                " Raise `timeout=` or look at the last [rank N] lines for where it hung."
            )


def run_distributed(
    function,
    args: tuple,
    kwargs: dict,
    options: RunOptions,
    *,
    source: str = "distributed",
    name: str | None = None,
    params: dict[str, str] | None = None,
) -> list:
    """Run ``function(*args, **kwargs)`` on every rank inside a new MLflow run; results by global rank."""
    starting = StartingCard(card_mode())  # in the cell at once, before anything is imported or launched
    call, held = None, HeldGpus()
    try:
        warmup.wait("tracking")  # never import MLflow beside the warm-up thread
        tags = {SOURCE_TAG: source, FUNCTION_TAG: name or getattr(function, "__qualname__", repr(function))}
        params = runs.call_params(function, args, kwargs) if params is None else params
        if options.remote:
            job_run_id = remote.submit(function, args, kwargs, options, tags, params)
            starting.waiting(f"submitted as job {job_run_id}; an interrupt stops following it, never the job")
        else:  # fails here, before any run exists, if it cannot travel or cannot resume MLFLOW_RUN_ID
            runs.check_resume()
            call = _prepare(function, args, kwargs, options, tags, starting)
            if isinstance(call, Call):  # on a Ray cluster, Ray places the call's GPUs
                used = int(tags[GPUS_TAG])
                held = gpu_claim.take(options.gpus, used, tags[FUNCTION_TAG], options.wait, starting.waiting)
    except BaseException as exc:
        if call is not None:
            call.cleanup()
        starting.failed(exc)
        raise
    if options.remote:
        return remote.follow(job_run_id, starting)
    try:
        return _run_tracked(call, options, tags, params, starting, held)
    finally:
        held.release()
        call.cleanup()


def _prepare(
    function, args: tuple, kwargs: dict, options: RunOptions, tags: dict[str, str], starting: StartingCard
) -> Call | ClusterCall:
    """The call on this node, or on a Ray cluster for ``nodes > 1`` or an explicit ``ray_address``."""
    payload = pack(function, args, kwargs)  # before anything else: a call that cannot travel fails at once
    if options.nodes > 1 or options.ray_address:
        address = configured_address(options.ray_address)
        if address is None:
            raise DistributedError(
                f"nodes={options.nodes} needs a Ray cluster: pass ray_address='auto' (this machine is a node of "
                f"the cluster) or ray_address='ray://head-host:10001', or set {RAY_ADDRESS_ENV} (the Jupyter "
                "server sets it from c.JupyterAir.ray_address)"
            )
        admit = gpu_claim.cluster_admission(tags[FUNCTION_TAG], options.wait)
        return ClusterCall(payload, call_context(), options, address, admit)
    if not Launcher.get().ready.done():
        starting.waiting("waiting for its fork server to import PyTorch (once per kernel)")
    world_size, gpu_count = world_size_for(options.gpus)
    tags.update({GPUS_TAG: str(gpu_count), WORLD_SIZE_TAG: str(world_size)})
    return Call(payload, call_context(), NodePlace(world_size))


def _run_tracked(
    call: Call | ClusterCall,
    options: RunOptions,
    tags: dict[str, str],
    params: dict[str, str],
    starting: StartingCard,
    held: HeldGpus,
) -> list:
    run = None
    tail = None
    try:
        try:
            call.start(starting.waiting)  # the ranks start while their run is created, then wait for its id
            tail = RankLogTail([path for files in call.log_files().values() for _, path in sorted(files.items())])
            tags = {**tags, **call.tags}
            starting.waiting("creating its MLflow run")
            run = TrackedRun(
                experiment=options.experiment,
                run_name=options.run_name,
                tags=tags,
                world_size=int(tags[WORLD_SIZE_TAG]),
                gpus=int(tags[GPUS_TAG]) // call.nodes,
                nodes=call.nodes,
                starting=starting,
            )
            call.release({**runs.worker_environment(run.run), **held.environment})
            run.announce(params, log_system_metrics=False)
            if options.log_system_metrics:  # where its ranks run: this kernel, or each node (system/node_<n>/...)
                used = int(tags[GPUS_TAG]) // call.nodes  # CPU ranks: no GPU's energy, even one held
                call.sample_metrics(run.run, [str(g) for g in held.gpus][:used] or gpus_in_use(used))
            _wait(call, tail, run, options.timeout)
        finally:
            call.stop()
        results = call.results()
    except BaseException as exc:
        if run is not None:
            _keep_logs(tail, run, call)
            run.finish_for(exc)
        else:
            starting.failed(exc)
        if isinstance(exc, KeyboardInterrupt) and not isinstance(exc, CallInterrupted):
            where = "and the run marked KILLED" if run is not None else "before its run was created"
            exc = CallInterrupted(f"the call was interrupted: every worker was stopped {where}")
            _remember(run, None, exc)
            raise exc from None
        _remember(run, None, exc)
        raise
    _keep_logs(tail, run, call)
    run.finish_for(None)
    _remember(run, results, None)
    return results


def _remember(run: TrackedRun | None, results: list | None, exc: BaseException | None) -> None:
    """Keep the ended call for ``%air_attach RUN_ID`` (a browser that went away shows it again)."""
    if run is not None:
        remote.remember(run.run.run_id, run.card, results, exc)


def _keep_logs(tail: RankLogTail, run: TrackedRun, call: Call | ClusterCall) -> None:
    run.show_lines(tail.pump(final=True))
    for folder, files in call.log_files().items():
        run.run.upload(list(files.values()), folder)


class DistributedFunction:
    """A function that runs locally when called and on every GPU with ``.distributed(...)``."""

    def __init__(self, function, options: RunOptions):
        functools.update_wrapper(self, function)
        self._function = function
        self._options = options

    def __call__(self, *args, **kwargs):
        return self._function(*args, **kwargs)

    def distributed(self, *args, remote: bool | None = None, **kwargs) -> list:
        """Run on every rank as one MLflow run; returns each rank's result, indexed by global rank.

        ``remote=True`` (or the decorator's) submits it as a job that outlives the kernel (``attach`` follows it
        again); the function's other arguments are passed on.
        """
        options = self._options if remote is None else dataclasses.replace(self._options, remote=remote)
        return run_distributed(self._function, args, kwargs, options)


def distributed(function=None, **options):
    """Decorate a training function so ``fn.distributed(...)`` runs it on every GPU as a tracked run.

    Options (see :class:`~jupyter_air.training.options.RunOptions`): ``gpus`` processes to start, one
    per GPU (None: every visible GPU; on a node without GPUs, ``gpus`` CPU processes, one when None);
    ``experiment`` / ``run_name`` where the run is recorded; ``log_system_metrics`` sample CPU, memory
    and GPU into the run; ``timeout`` seconds after which a hung call is stopped; ``nodes`` Ray nodes to
    spread the call over (``gpus`` on each) and ``ray_address`` the cluster (default ``$AIR_RAY_ADDRESS``);
    ``remote`` submit each call as a job that outlives the kernel; ``wait=False`` fail at once, saying who holds
    them, when this machine's GPUs are held by other work (default: wait in line in the GPU queue).
    """
    run_options = RunOptions.of(options)
    warmup.warm_up("tracking", "launcher")  # in the background: the first call then starts at once
    if function is None:
        return lambda fn: DistributedFunction(fn, run_options)
    return DistributedFunction(function, run_options)


distributed.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
    [inspect.Parameter("function", inspect.Parameter.POSITIONAL_OR_KEYWORD, default=None), *RunOptions.signature()]
)
