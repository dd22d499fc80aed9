"""The run's live status in a cell's output: experiment and run links (HTML in Jupyter, text elsewhere)."""

from __future__ import annotations

import html
import sys
import time

from jupyter_air.format import duration

_STATUS_COLOURS = {"RUNNING": "#1f6feb", "FINISHED": "#1a7f37", "FAILED": "#cf222e", "KILLED": "#9a6700"}


def in_jupyter_kernel() -> bool:
    """True inside a Jupyter kernel, where rich (HTML) outputs are shown."""
    shell = sys.modules.get("IPython") and sys.modules["IPython"].get_ipython()
    return bool(shell) and getattr(shell, "kernel", None) is not None


def _link(text: str, url: str | None) -> str:
    label = html.escape(text)
    if not url:
        return f"<b>{label}</b>"
    return f'<a href="{html.escape(url, quote=True)}" target="_blank" rel="noopener">{label}</a>'


def render_html(run, status: str, seconds: float) -> str:
    """One line: experiment and run as links, the status and how long the call has taken."""
    colour = _STATUS_COLOURS.get(status, "inherit")
    hint = "" if run.url else " <i>(no MLflow UI known for this store; open it with <code>mlflow ui</code>)</i>"
    return (
        '<div class="jp-Air-runStatus">MLflow experiment '
        f"{_link(run.experiment_name, run.experiment_url)} · run {_link(run.run_name, run.url)}"
        f' · <span style="color:{colour};font-weight:600">{html.escape(status.lower())}</span>'
        f" · {duration(seconds)}{hint}</div>"
    )


def render_text(run, status: str, seconds: float) -> str:
    where = run.url or "no MLflow UI link (open the store with `mlflow ui`)"
    return (
        f"MLflow run {run.run_name!r} ({run.run_id}) in experiment {run.experiment_name!r}: "
        f"{status.lower()} after {duration(seconds)} · {where}"
    )


class RunStatusView:
    """Shows a run's status as soon as it exists and updates it in place until it ends."""

    def __init__(self, run, refresh_seconds: float = 1.0):
        self.run = run
        self.refresh_seconds = refresh_seconds
        self.started = time.monotonic()
        self.status = "RUNNING"
        self._handle = None
        self._last_refresh = 0.0

    def show(self) -> None:
        if in_jupyter_kernel():
            from IPython.display import HTML, display

            self._handle = display(HTML(self._html()), display_id=True)
        else:
            print(render_text(self.run, self.status, 0.0), flush=True)
        self._last_refresh = time.monotonic()

    def _html(self) -> str:
        return render_html(self.run, self.status, time.monotonic() - self.started)

    def tick(self) -> None:
        """Refresh the shown duration at most once per ``refresh_seconds`` while running."""
        now = time.monotonic()
        if self._handle is not None and now - self._last_refresh >= self.refresh_seconds:
            from IPython.display import HTML

            self._handle.update(HTML(self._html()))
            self._last_refresh = now

    def finish(self, status: str) -> None:
        self.status = status
        if self._handle is not None:
            from IPython.display import HTML

            self._handle.update(HTML(self._html()))
        else:
            print(render_text(self.run, status, time.monotonic() - self.started), flush=True)
