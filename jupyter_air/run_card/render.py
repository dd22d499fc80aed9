"""The card as data for its live view (JSON), and as static HTML and text kept in the saved notebook."""

from __future__ import annotations

import html
import math

from jupyter_air.format import duration
from jupyter_air.run_card.state import FAILED, CardState, MetricSeries

STATUS_COLOURS = {"RUNNING": "#1f6feb", "FINISHED": "#1a7f37", "FAILED": "#cf222e", "KILLED": "#9a6700"}
#: The sparkline's SVG box: 100 wide, 20 high (the view scales it).
SPARK_WIDTH, SPARK_HEIGHT = 100, 20
_NO_UI_HINT = "no MLflow UI known for this store; open it with `mlflow ui`"


def spark_path(points: list[float]) -> str:
    """An SVG path drawing ``points`` left to right in the sparkline's box ('' with no finite point)."""
    values = [v for v in points if math.isfinite(v)]
    if not values:
        return ""
    low, high = min(values), max(values)
    span = high - low
    step = SPARK_WIDTH / max(1, len(values) - 1)

    def y(v: float) -> float:
        return SPARK_HEIGHT / 2 if span == 0 else (SPARK_HEIGHT - 1) - (v - low) / span * (SPARK_HEIGHT - 2)

    if len(values) == 1:
        return f"M0,{y(values[0]):.1f}H{SPARK_WIDTH}"
    return "M" + "L".join(f"{i * step:.1f},{y(v):.1f}" for i, v in enumerate(values))


def value_text(value: float) -> str:
    return f"{value:.5g}"


def _metric_json(metric: MetricSeries) -> dict:
    return {
        "key": metric.key,
        "value": metric.value if math.isfinite(metric.value) else None,
        "value_text": value_text(metric.value),
        "step": metric.step,
        "spark": spark_path(metric.points),
    }


def card_json(state: CardState) -> dict:
    """Everything the live view draws; keys are snake_case, times epoch milliseconds."""
    h = state.header
    failure = state.failure
    return {
        "run": vars(h.run).copy(),
        "kind": h.kind,
        "world_size": h.world_size,
        "nodes": h.nodes,
        "gpus": list(h.gpus),
        "job_run_id": h.job_run_id,
        "status": state.status,
        "started_ms": state.started_ms,
        "ended_ms": state.ended_ms,
        "reason": state.reason,
        "failure": None if failure is None else vars(failure).copy(),
        "metrics": [_metric_json(m) for m in state.metrics],
        "energy": None if state.energy is None else vars(state.energy).copy(),
        "rows": state.rows(),
        "output": state.output(),
        "dropped_lines": state.dropped_lines(),
    }


def placement_text(data: dict) -> str:
    """``2 ranks on 1 node · GPUs 0, 1`` (``CPU`` without GPUs), or ``in this kernel``."""
    if data["kind"] == "kernel":
        return "in this kernel"
    ranks, nodes, gpus = data["world_size"], data["nodes"], data["gpus"]
    devices = f"GPU{'s' * (len(gpus) != 1)} {', '.join(gpus)}" if gpus else "CPU"
    return f"{ranks} rank{'s' * (ranks != 1)} on {nodes} node{'s' * (nodes != 1)} · {devices}"


def job_text(job_run_id: str) -> str:
    """``job job-… · follow it again from any kernel: %air_attach job-…``."""
    return f"job {job_run_id} · follow it again from any kernel: %air_attach {job_run_id}"


def energy_text(energy: dict) -> str:
    """``GPU energy 0.869 Wh`` (``1.23 kWh`` from 1,000 Wh on), ``(simulated GPUs)`` when they were."""
    value, unit = (energy["watt_hours"] / 1000, "kWh") if energy["watt_hours"] >= 1000 else (energy["watt_hours"], "Wh")
    return f"GPU energy {float(f'{value:.3g}'):g} {unit}" + (" (simulated GPUs)" if energy["simulated"] else "")


def failure_text(failure: dict) -> str:
    """``node 0, rank 1, exit code 1: ValueError: boom``."""
    where = [f"{k} {failure[k]}" for k in ("node", "rank") if failure.get(k) is not None]
    if failure.get("exitcode") is not None:
        where.append(f"exit code {failure['exitcode']}")
    return (", ".join(where) + ": " if where else "") + failure["message"]


def _seconds(data: dict, now_ms: int | None) -> float:
    end = data["ended_ms"] if data["ended_ms"] is not None else now_ms
    return 0.0 if end is None else max(0.0, (end - data["started_ms"]) / 1000)


def _link(text: str, url: str | None) -> str:
    label = html.escape(text)
    if not url:
        return f"<b>{label}</b>"
    return f'<a href="{html.escape(url, quote=True)}" target="_blank" rel="noopener">{label}</a>'


def render_html(data: dict, now_ms: int | None = None) -> str:
    """The card as static HTML (names escaped): what a saved notebook shows without a kernel."""
    run, status = data["run"], data["status"]
    colour = STATUS_COLOURS.get(status, "inherit")
    hint = "" if run["url"] else f' <i class="jp-Air-runCard-hint">({html.escape(_NO_UI_HINT)})</i>'
    parts = [
        f'<div class="jp-Air-runCard jp-Air-runCard-{status.lower()}" style="border-left:3px solid {colour};'
        'padding:2px 8px">',
        '<div class="jp-Air-runCard-header">MLflow experiment '
        f"{_link(run['experiment_name'], run['experiment_url'])} · run {_link(run['name'], run['url'])}"
        f' · <span class="jp-Air-runCard-status" style="color:{colour};font-weight:600">'
        f"{html.escape(status.lower())}</span> · {duration(_seconds(data, now_ms))}"
        f" · {html.escape(placement_text(data))}{hint}</div>",
    ]
    if data.get("job_run_id"):
        parts.append(f'<div class="jp-Air-runCard-job">{html.escape(job_text(data["job_run_id"]))}</div>')
    if data["failure"]:
        parts.append(
            f'<div class="jp-Air-runCard-failure" style="color:{STATUS_COLOURS[FAILED]}">Failed on '
            f"{html.escape(failure_text(data['failure']))}</div>"
        )
    elif data["reason"]:
        parts.append(f'<div class="jp-Air-runCard-reason">{html.escape(data["reason"])}</div>')
    if data["energy"]:
        parts.append(f'<div class="jp-Air-runCard-energy">{html.escape(energy_text(data["energy"]))}</div>')
    if data["metrics"]:
        parts.append(
            '<table class="jp-Air-runCard-table jp-Air-runCard-metrics">'
            "<tr><th>metric</th><th>value</th><th>step</th></tr>"
        )
        parts.extend(_metric_row(m) for m in data["metrics"])
        parts.append("</table>")
    if data["rows"]:
        parts.append('<table class="jp-Air-runCard-table jp-Air-runCard-ranks">')
        parts.extend(
            f"<tr><td>{html.escape(r['name'])}</td><td>{html.escape(_state_text(r))}</td>"
            f"<td><code>{html.escape(r['line'])}</code></td></tr>"
            for r in data["rows"]
        )
        parts.append("</table>")
    if data["output"]:
        parts.append(
            f'<details class="jp-Air-runCard-output"><summary>{html.escape(_output_title(data))}</summary>'
            f"<pre>{html.escape(data['output'])}</pre></details>"
        )
    parts.append("</div>")
    return "".join(parts)


def _metric_row(metric: dict) -> str:
    spark = (
        f'<svg class="jp-Air-runCard-spark" viewBox="0 0 {SPARK_WIDTH} {SPARK_HEIGHT}" width="{SPARK_WIDTH}" '
        f'height="{SPARK_HEIGHT}" preserveAspectRatio="none"><path d="{metric["spark"]}" fill="none" '
        'stroke="currentColor" stroke-width="1.5" vector-effect="non-scaling-stroke"/></svg>'
        if metric["spark"]
        else ""
    )
    return (
        f"<tr><td>{html.escape(metric['key'])}</td><td>{html.escape(metric['value_text'])}</td>"
        f"<td>{metric['step']}</td><td>{spark}</td></tr>"
    )


def _state_text(row: dict) -> str:
    return row["state"] if row["exitcode"] is None else f"{row['state']} (exit code {row['exitcode']})"


def _output_title(data: dict) -> str:
    dropped = data["dropped_lines"]
    more = f"; {dropped} earlier line(s) only in the run's logs/ artifacts" if dropped else ""
    return f"Output of every rank{more}"


def render_text(data: dict, now_ms: int | None = None) -> str:
    """The card as plain text: the first line names the run, its status and its link."""
    run = data["run"]
    where = run["url"] or _NO_UI_HINT
    lines = [
        f"MLflow run {run['name']!r} ({run['id']}) in experiment {run['experiment_name']!r}: "
        f"{data['status'].lower()} after {duration(_seconds(data, now_ms))} · {where}",
        f"  {placement_text(data)}",
    ]
    if data.get("job_run_id"):
        lines.append(f"  {job_text(data['job_run_id'])}")
    if data["failure"]:
        lines.append(f"  Failed on {failure_text(data['failure'])}")
    elif data["reason"]:
        lines.append(f"  {data['reason']}")
    if data["energy"]:
        lines.append(f"  {energy_text(data['energy'])}")
    lines.extend(f"  {m['key']} = {m['value_text']} (step {m['step']})" for m in data["metrics"])
    lines.extend(f"  {r['name']}: {_state_text(r)}: {r['line']}" for r in data["rows"])
    return "\n".join(lines)
