"""`air usage`: GPU-hours, energy and cost per user, experiment or day, from the tracking store's runs
(``tracking.usage``'s answer, formatted)."""

from __future__ import annotations

import argparse
import datetime
import re
import time

from jupyter_air.error_kinds import BAD_INPUT
from jupyter_air.tracking.usage import GPU_HOUR_PRICE_ENV, GROUPS, KWH_PRICE_ENV, Prices, price, store_usage

from . import output
from .errors import CliError

_SPAN = re.compile(r"(\d+(?:\.\d+)?)([dh])")
_SPAN_MS = {"d": 86_400_000, "h": 3_600_000}
WHEN_HELP = "a span back from now (7d, 24h) or a local date (2026-12-01)"


def add_parser(sub, json_help: str) -> None:
    usage_parser = sub.add_parser(
        "usage",
        help="GPU-hours, energy and cost per user, experiment or day, from the tracking store's runs",
        description="Reads every run of the tracking store (MLFLOW_TRACKING_URI, else AIR_HOME's): a run's GPUs "
        "times its time in the window, its measured energy in the same share, priced at --gpu-hour-price and "
        f"--kwh-price (default ${GPU_HOUR_PRICE_ENV} and ${KWH_PRICE_ENV}, else 0).",
    )
    usage_parser.add_argument("--by", choices=GROUPS, default="user", help="what a row is (default: user)")
    usage_parser.add_argument("--since", default="7d", metavar="WHEN", help=f"start: {WHEN_HELP}; default 7d")
    usage_parser.add_argument("--until", metavar="WHEN", help=f"end: {WHEN_HELP} (its start); default now")
    usage_parser.add_argument("--gpu-hour-price", metavar="PRICE", help=f"price of a GPU-hour (${GPU_HOUR_PRICE_ENV})")
    usage_parser.add_argument("--kwh-price", metavar="PRICE", help=f"price of a kWh of GPU energy (${KWH_PRICE_ENV})")
    usage_parser.add_argument("-o", "--output", choices=["json"], help=json_help)


def when_ms(text: str, flag: str, now_ms: int) -> int:
    """``text`` (``7d``, ``24h``, ``2026-12-01``) as epoch milliseconds; CliError naming ``flag`` otherwise."""
    if span := _SPAN.fullmatch(text.strip()):
        return now_ms - int(float(span.group(1)) * _SPAN_MS[span.group(2)])
    try:
        day = datetime.date.fromisoformat(text.strip())
    except ValueError:
        raise CliError(f"{flag} {text!r}: expected {WHEN_HELP}", BAD_INPUT) from None
    return int(datetime.datetime.combine(day, datetime.time()).timestamp() * 1000)


def usage_command(args: argparse.Namespace) -> int:
    now_ms = int(time.time() * 1000)
    since = when_ms(args.since, "--since", now_ms)
    until = now_ms if args.until is None else when_ms(args.until, "--until", now_ms)
    prices = Prices.from_environment(
        gpu_hour=None if args.gpu_hour_price is None else price(args.gpu_hour_price, "--gpu-hour-price"),
        kwh=None if args.kwh_price is None else price(args.kwh_price, "--kwh-price"),
    )
    answer = store_usage(args.by, since, until, prices)
    if args.output == "json":
        output.print_json(answer)
        return 0
    print(f"GPU use from {output.clock(since)} to {output.clock(until)}, by {args.by}")
    columns = (args.by.upper(), "RUNS", "GPU-HOURS", "ENERGY (WH)", "COST")
    rows = [_row(row) for row in answer["rows"]] + [_row(answer["total"])]
    output.table(columns, rows)
    if answer["total"]["simulated_energy_wh"]:
        simulated = answer["total"]["simulated_energy_wh"]
        print(f"not counted: {simulated:.2f} Wh measured on simulated GPUs")
    return 0


def _row(row: dict) -> list[str]:
    return [row["key"], str(row["runs"]), f"{row['gpu_hours']:.2f}", f"{row['energy_wh']:.2f}", f"{row['cost']:.2f}"]
