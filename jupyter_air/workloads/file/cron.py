"""Quartz cron expressions and IANA time zones of a workload's `schedule:`: checked, and their fire times (croniter)."""

from __future__ import annotations

import difflib
import functools
import re
from datetime import datetime
from zoneinfo import ZoneInfo, available_timezones

#: The shortest time between two fires of one schedule.
MIN_INTERVAL_SECONDS = 10
_FIELDS = "seconds minutes hours day-of-month month day-of-week [year]"
_DAYS = ("SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT")  # Quartz numbers them 1-7, croniter 0-6


class CronProblem(ValueError):
    """An expression or time zone that cannot be used; the message says what and how to fix it."""


@functools.lru_cache(maxsize=4096)
def to_croniter(expression: str) -> str:
    """The croniter form (six or seven fields, seconds first) of a Quartz expression; raises CronProblem."""
    fields = expression.split()
    if len(fields) == 5:
        raise CronProblem(
            f"5 fields: a Quartz expression starts with seconds ({_FIELDS}); for 02:00 daily write '0 0 2 * * ?'"
        )
    if len(fields) not in (6, 7):
        raise CronProblem(f"{len(fields)} fields; a Quartz expression has 6 or 7: {_FIELDS}, e.g. '0 0 2 * * ?'")
    dom, dow = fields[3].upper(), fields[5].upper()
    if dom not in ("*", "?") and dow not in ("*", "?"):
        raise CronProblem(f"both day-of-month ({dom}) and day-of-week ({dow}) are set; put '?' in one of them")
    if dom == "LW" or dom.startswith("L-"):
        raise CronProblem(f"day-of-month {dom} is not supported; use L (the last day) or nW (the weekday nearest n)")
    fields[3] = "*" if dom == "?" else dom
    fields[5] = "*" if dow == "?" else ",".join(_day_of_week(item) for item in dow.split(","))
    converted = " ".join(fields)
    from croniter import croniter

    try:
        croniter(converted, second_at_beginning=True)
    except (ValueError, KeyError) as err:  # croniter's errors are ValueErrors naming the field
        raise CronProblem(f"not a valid Quartz expression ({_FIELDS}): {err}") from None
    return converted


def _day_of_week(item: str) -> str:
    """One Quartz day-of-week item in croniter's numbering: 1-7 is SUN-SAT, ``6L`` the last Friday, ``L`` Saturday."""
    if item == "L":
        return "6"
    if (last := re.fullmatch(r"(\d+|[A-Z]{3})L", item)) is not None:
        day = last.group(1)
        return f"L{_DAYS.index(day) if day in _DAYS else _day_number(day)}"
    return re.sub(r"(?<![#/\d])\d+", lambda m: str(_day_number(m.group())), item)


def _day_number(text: str) -> int:
    if not 1 <= int(text) <= 7:
        raise CronProblem(f"day-of-week {text}: Quartz numbers days 1-7 (1 = SUN ... 7 = SAT), or write SUN-SAT")
    return int(text) - 1


def check_expression(expression: str) -> str:
    """The expression if it is valid Quartz and fires at most every MIN_INTERVAL_SECONDS; raises CronProblem."""
    from croniter import croniter

    converted = to_croniter(expression)
    expanded = croniter(converted, second_at_beginning=True).expanded
    seconds, minutes = expanded[5], expanded[0]  # croniter's order: minutes ... day-of-week, seconds, [year]
    gap = _shortest_gap(seconds, minutes)
    if gap < MIN_INTERVAL_SECONDS:
        raise CronProblem(
            f"fires {gap} s apart; a schedule fires at most every {MIN_INTERVAL_SECONDS} s: e.g. '*/10 * * * * ?'"
        )
    if next_fires(expression, "UTC", datetime.now().timestamp() * 1000, 1) == []:
        raise CronProblem("never fires again (its year field is past); remove the year or set a future one")
    return expression


def _shortest_gap(seconds: list, minutes: list) -> int:
    """Seconds between the two closest fires of a seconds field (within a minute, or across two firing minutes)."""
    secs = list(range(60)) if seconds == ["*"] else sorted(seconds)
    within = min((b - a for a, b in zip(secs, secs[1:], strict=False)), default=60)
    mins = set(range(60)) if minutes == ["*"] else set(minutes)
    consecutive = any((m + 1) % 60 in mins for m in mins)
    return min(within, 60 - secs[-1] + secs[0]) if consecutive else within


def check_timezone(name: str) -> str:
    """The name if it is an IANA time zone; raises CronProblem with the closest names."""
    zones = _zones()
    if name in zones:
        return name
    folded = {z.lower(): z for z in zones}
    close = difflib.get_close_matches(name.lower(), list(folded), n=1, cutoff=0.6)
    hint = f"did you mean '{folded[close[0]]}'?" if close else "use an IANA name such as Europe/Paris or UTC"
    raise CronProblem(f"unknown time zone; {hint}")


@functools.cache
def _zones() -> frozenset[str]:
    return frozenset(available_timezones())


def next_fires(expression: str, timezone: str, after_ms: float, count: int) -> list[datetime]:
    """The next ``count`` fire times strictly after ``after_ms``, in ``timezone``; fewer once the expression ends.

    Daylight saving time: a wall time that does not exist fires at the first instant after the gap; a wall time
    that happens twice fires once (the first), unless the hours field is a wildcard (``*``, ``*/2``): then every
    hour fires, the repeated one too.
    """
    from croniter import CroniterBadDateError, croniter

    converted = to_croniter(expression)
    hours_wild = converted.split()[2].startswith("*")
    zone = ZoneInfo(timezone)
    start = datetime.fromtimestamp(after_ms / 1000, zone)
    found, it = [], croniter(converted, start, second_at_beginning=True)
    while len(found) < count:
        try:
            fire = it.get_next(datetime)
        except CroniterBadDateError:
            break
        if hours_wild or not _repeated(fire):
            found.append(fire)
    return found


def previous_fire(expression: str, timezone: str, at_ms: float) -> int:
    """The latest fire time (epoch ms) before ``at_ms``."""
    from croniter import croniter

    start = datetime.fromtimestamp(at_ms / 1000, ZoneInfo(timezone))
    return as_ms(croniter(to_croniter(expression), start, second_at_beginning=True).get_prev(datetime))


def _repeated(moment: datetime) -> bool:
    """Whether ``moment`` is the second occurrence of its wall time (clocks went back an hour before it)."""
    earlier = moment.replace(fold=0)
    return moment.utcoffset() != earlier.utcoffset() and earlier.timestamp() < moment.timestamp()


def as_ms(moment: datetime) -> int:
    return round(moment.timestamp() * 1000)


def shown(ms: int, timezone: str) -> str:
    """A fire time as the user reads it: ``2026-03-29 02:00:00 WEST (+01:00)``."""
    moment = datetime.fromtimestamp(ms / 1000, ZoneInfo(timezone))
    offset = moment.strftime("%z")
    return f"{moment:%Y-%m-%d %H:%M:%S} {moment.tzname()} ({offset[:3]}:{offset[3:]})"


def iso(ms: int, timezone: str) -> str:
    """A fire time in ISO 8601 with its offset in the schedule's time zone (the ``air.scheduled_time`` tag)."""
    return datetime.fromtimestamp(ms / 1000, ZoneInfo(timezone)).isoformat(timespec="seconds")
