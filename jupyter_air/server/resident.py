"""What the Jupyter server keeps warm beside itself for its kernels and terminals: AIR_HOME's MLflow server (the
embedded MLflow UI) and AIR_HOME's fork server zygote (torch imported once for every kernel). Each stops within 10 s
of the server's exit unless another process (a kernel of another server, `air`, a job) holds it, and else once idle
(:mod:`jupyter_air.residents`)."""

from __future__ import annotations

import importlib.util
import logging
import threading

from jupyter_air.training import zygote_client

from ..home import AirHomeError
from ..tracking.resident import remove_stale_folders
from ..tracking.store import export_tracking_uri
from ..tracking.ui_process import MlflowUi
from ..tracking.ui_retry import StartRetry
from .tasks import UiAutostart


def mlflow_ui(log: logging.Logger, retry_seconds: float, autostart: bool) -> tuple[MlflowUi, list]:
    """The embedded MLflow UI (AIR_HOME's resident MLflow server), started on first use, and with ``autostart`` the
    task that starts it in the background once its store exists. Socket folders that dead servers left behind are
    removed now. Kernels and terminals get the store in MLFLOW_TRACKING_URI: plain MLflow in a notebook tracks where
    calls, the panel and the UI look."""
    for folder in remove_stale_folders():
        log.info("jupyter_air: removed %s, left by an MLflow server that is gone.", folder)
    ui = MlflowUi(log, retry=StartRetry(retry_seconds))
    try:
        log.info("jupyter_air: kernels and terminals track into %s.", export_tracking_uri())
    except AirHomeError as err:  # the rest of the extension works; the UI's first visit says why it cannot
        log.error("jupyter_air: %s The MLflow UI cannot start until then.", err)
        return ui, []
    return ui, [UiAutostart(ui)] if autostart else []


class ZygoteWarmup:
    """Starts AIR_HOME's fork server zygote in the background when torch is installed, unless one runs, so the first
    ``.distributed()`` of the server's first kernel does not wait for torch to import."""

    def __init__(self, log: logging.Logger):
        self.log = log

    def start(self) -> None:
        if importlib.util.find_spec("torch") is not None:
            threading.Thread(target=self._warm, name="air-zygote-warm-up", daemon=True).start()

    def stop(self) -> None:
        """Nothing: the zygote stops by itself once this server has exited, unless another process holds it."""

    def _warm(self) -> None:
        try:
            if zygote_client.warm():
                self.log.info("jupyter_air: started AIR_HOME's fork server zygote for the kernels' first calls.")
        except Exception as exc:  # noqa: BLE001 - a kernel's first call starts one itself and says what is wrong
            self.log.warning("jupyter_air: AIR_HOME's fork server zygote was not started ahead: %s", exc)
