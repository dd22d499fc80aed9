"""GPU use per user, experiment or day, from the runs' own records: GPU-hours (a run's ``air.gpus`` times the part
of its time inside the window), energy (its ``system/total_energy_watt_hours``, in the same share) and their cost
at the admin's prices. Knows nothing of HTTP or the terminal.

A run still running counts until now. Days are the machine's local days; a run spanning midnight counts on both,
by its time in each. Energy measured on the simulated GPU source is never summed with real energy: it is kept
apart, and costs nothing.
"""

from __future__ import annotations

import datetime
import os
import time
from collections.abc import Iterator, Mapping
from dataclasses import asdict, dataclass, field

from jupyter_air.error_kinds import BAD_INPUT
from jupyter_air.tracking.energy import ENERGY_METRIC, on_simulated_gpus
from jupyter_air.tracking.naming import GPUS_TAG
from jupyter_air.tracking.store import existing_client

#: What usage can be grouped by.
GROUPS = ("user", "experiment", "day")
#: The price of one GPU-hour, in the team's currency, that `air usage` and the usage route charge (unset: 0).
GPU_HOUR_PRICE_ENV = "AIR_GPU_HOUR_PRICE"
#: The price of one kWh of measured GPU energy that `air usage` and the usage route charge (unset: 0).
KWH_PRICE_ENV = "AIR_KWH_PRICE"
_HOUR_MS = 3_600_000
_PAGE = 1000


#: Milliseconds of the window when none is given: the last 7 days.
DEFAULT_WINDOW_MS = 7 * 86_400_000


class BadUsageQuery(ValueError):
    """A window, grouping or price that cannot be used; the message says which and what to give."""

    kind = BAD_INPUT


@dataclass(frozen=True)
class Prices:
    """Price per GPU-hour and per kWh (0: not charged)."""

    gpu_hour: float = 0.0
    kwh: float = 0.0

    @classmethod
    def from_environment(
        cls, environ: Mapping[str, str] | None = None, gpu_hour: float | None = None, kwh: float | None = None
    ) -> Prices:
        """``gpu_hour`` and ``kwh`` where given, else ``$AIR_GPU_HOUR_PRICE`` and ``$AIR_KWH_PRICE`` (unset: 0);
        BadUsageQuery naming a variable read whose value is no price."""
        env = os.environ if environ is None else environ
        return cls(
            price(env.get(GPU_HOUR_PRICE_ENV, ""), GPU_HOUR_PRICE_ENV) if gpu_hour is None else gpu_hour,
            price(env.get(KWH_PRICE_ENV, ""), KWH_PRICE_ENV) if kwh is None else kwh,
        )


def price(text: str, name: str) -> float:
    """``text`` as a price (empty: 0); BadUsageQuery naming ``name`` otherwise."""
    try:
        value = float(text) if text.strip() else 0.0
    except ValueError:
        value = -1.0
    if not value >= 0 or value == float("inf"):
        raise BadUsageQuery(f"{name}={text!r}: expected a price of 0 or more, e.g. 2.5")
    return value


@dataclass
class Row:
    """One group's use in the window."""

    key: str
    runs: int = 0
    gpu_hours: float = 0.0
    energy_wh: float = 0.0
    simulated_energy_wh: float = 0.0
    cost: float = 0.0
    run_ids: set[str] = field(default_factory=set, repr=False)

    def add(self, run_id: str, gpu_hours: float, energy_wh: float, simulated: bool) -> None:
        self.run_ids.add(run_id)
        self.runs = len(self.run_ids)
        self.gpu_hours += gpu_hours
        if simulated:
            self.simulated_energy_wh += energy_wh
        else:
            self.energy_wh += energy_wh

    def priced(self, prices: Prices) -> dict:
        self.cost = self.gpu_hours * prices.gpu_hour + self.energy_wh / 1000 * prices.kwh
        shown = {k: v for k, v in asdict(self).items() if k != "run_ids"}
        return {k: round(v, 6) if isinstance(v, float) else v for k, v in shown.items()}


def store_usage(by: str, since_ms: int, until_ms: int, prices: Prices | None = None, uri: str | None = None) -> dict:
    """:func:`usage` of the tracking store ``uri`` (default :func:`tracking_uri`) at ``prices`` (default: the
    environment's), never creating the store: a SQLite store nobody made yet has no use."""
    prices = Prices.from_environment() if prices is None else prices
    return usage(existing_client(uri), by, since_ms, until_ms, prices)


def usage(mlflow_client, by: str, since_ms: int, until_ms: int, prices: Prices, now_ms: int | None = None) -> dict:
    """Use between ``since_ms`` and ``until_ms`` grouped ``by`` one of :data:`GROUPS`, most GPU-hours first (days
    in date order):
    ``{"by", "since_ms", "until_ms", "prices", "rows": [...], "total": {...}}`` (``mlflow_client``: None for a
    store that does not exist yet)."""
    if by not in GROUPS:
        raise BadUsageQuery(f"cannot group by {by!r}: give one of {', '.join(GROUPS)}")
    if until_ms <= since_ms:
        raise BadUsageQuery("the window is empty: its end must come after its start")
    now_ms = int(time.time() * 1000) if now_ms is None else now_ms
    found = _all_experiments(mlflow_client) if mlflow_client is not None else ()
    experiments = {e.experiment_id: e.name for e in found}
    rows: dict[str, Row] = {}
    total = Row("total")
    for run in _runs(mlflow_client, list(experiments), until_ms):
        start, end = run.info.start_time, run.info.end_time or now_ms
        for key, part_start, part_end in _parts(run, experiments, by, max(start, since_ms), min(end, until_ms)):
            share = (part_end - part_start) / max(end - start, 1)
            gpu_hours = _gpus(run.data.tags) * (part_end - part_start) / _HOUR_MS
            energy = run.data.metrics.get(ENERGY_METRIC, 0.0) * share
            simulated = on_simulated_gpus(run.data.tags)
            for row in (rows.setdefault(key, Row(key)), total):
                row.add(run.info.run_id, gpu_hours, energy, simulated)
    if by == "day":
        ordered = sorted(rows.values(), key=lambda r: r.key)
    else:
        ordered = sorted(rows.values(), key=lambda r: (-r.gpu_hours, -r.energy_wh, r.key))
    return {
        "by": by,
        "since_ms": since_ms,
        "until_ms": until_ms,
        "prices": asdict(prices),
        "rows": [row.priced(prices) for row in ordered],
        "total": total.priced(prices),
    }


def _all_experiments(mlflow_client) -> Iterator:
    token = None
    while True:
        page = mlflow_client.search_experiments(max_results=_PAGE, page_token=token)
        yield from page
        token = page.token
        if not token:
            return


def _runs(mlflow_client, experiment_ids: list[str], until_ms: int) -> Iterator:
    """Every run started before ``until_ms`` (those that ended before the window add nothing)."""
    token = None
    while experiment_ids:
        page = mlflow_client.search_runs(
            experiment_ids, f"attributes.start_time < {until_ms}", max_results=_PAGE, page_token=token
        )
        yield from page
        token = page.token
        if not token:
            return


def _gpus(tags: Mapping[str, str]) -> int:
    """The run's GPUs, as ``air.gpus`` says (0 without it, or for a value that is no count)."""
    value = tags.get(GPUS_TAG, "")
    return int(value) if value.isdigit() else 0


def _parts(run, experiments: dict[str, str], by: str, start: int, end: int) -> Iterator[tuple[str, int, int]]:
    """The run's time in the window as ``(group key, from ms, to ms)``: one part, or one per local day."""
    if end <= start:
        return
    if by == "user":
        yield run.data.tags.get("mlflow.user") or "unknown", start, end
    elif by == "experiment":
        yield experiments.get(run.info.experiment_id, run.info.experiment_id), start, end
    else:
        while start < end:
            day = datetime.datetime.fromtimestamp(start / 1000).date()
            midnight = datetime.datetime.combine(day + datetime.timedelta(days=1), datetime.time())
            cut = min(end, int(midnight.timestamp() * 1000))
            yield day.isoformat(), start, cut
            start = cut
