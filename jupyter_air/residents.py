"""What every resident process of an AIR_HOME shares (its MLflow server, its fork server zygote): it is started
detached, in a session of its own (an interrupt of the kernel or terminal that started it is not for it), in AIR_HOME,
its output in a private log under ``AIR_HOME/logs``, with none of its starter's call, job or run variables, and it
stops by itself after an idle time its environment variable sets."""

from __future__ import annotations

import os
import subprocess
import threading

from jupyter_air.home import air_home, open_private, private_dir

#: Variables a resident process never inherits from whoever started it: it belongs to no call, job or run.
NOT_INHERITED = ("AIR_CALL_ID", "AIR_JOB_RUN_ID", "AIR_ATTEMPT", "MLFLOW_RUN_ID", "MLFLOW_EXPERIMENT_ID")


def idle_seconds(name: str, default: float) -> float:
    """``$name`` or ``default``: how long a resident process stays idle before it stops; ValueError (saying what to
    set) for a value that is not a positive number."""
    raw = os.environ.get(name, "").strip()
    try:
        value = float(raw) if raw else default
    except ValueError:
        value = 0.0
    if not value > 0:
        raise ValueError(f"{name}={raw!r}: expected a positive number of seconds, e.g. {default:g}")
    return value


def start(command: list[str], log_name: str, idle: tuple[str, float], env: dict[str, str] | None = None):
    """Start ``command`` as a resident process of AIR_HOME, its output in ``AIR_HOME/logs/<log_name>``, its idle
    time ``idle`` (the variable and its default) checked here and passed on, ``env`` added to this environment."""
    home = air_home()
    name, default = idle
    environment = {k: v for k, v in os.environ.items() if k not in NOT_INHERITED}
    environment.update({name: str(idle_seconds(name, default)), **(env or {})})
    with open_private(private_dir(home / "logs") / log_name) as log:
        process = subprocess.Popen(
            command, cwd=home, env=environment, stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True
        )
    threading.Thread(target=process.wait, name=f"air-reaper-{process.pid}", daemon=True).start()
    return process
