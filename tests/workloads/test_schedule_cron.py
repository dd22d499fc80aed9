"""Quartz expressions read as Quartz does (days 1-7 = SUN-SAT, `L`, `W`, `#`, `?`), in the schedule's time zone."""

from __future__ import annotations

from datetime import datetime
from zoneinfo import ZoneInfo

import pytest

from jupyter_air.workloads.file.cron import CronProblem, check_expression, next_fires


def local(text: str, zone: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=ZoneInfo(zone))


def fires(expression: str, zone: str, after: str, count: int) -> list[str]:
    start = local(after, zone).timestamp() * 1000
    return [f.isoformat() for f in next_fires(expression, zone, start, count)]


@pytest.mark.parametrize(
    "expression, expected",
    [
        ("0 0 12 ? * 6", ["2026-03-06T12:00:00+00:00", "2026-03-13T12:00:00+00:00"]),  # 6 is Friday in Quartz
        ("0 0 12 ? * 6#3", ["2026-03-20T12:00:00+00:00", "2026-04-17T12:00:00+01:00"]),  # the third Friday
        ("0 0 12 ? * 6L", ["2026-03-27T12:00:00+00:00", "2026-04-24T12:00:00+01:00"]),  # the last Friday
        ("0 0 12 ? * FRIL", ["2026-03-27T12:00:00+00:00", "2026-04-24T12:00:00+01:00"]),
        ("0 0 12 ? * 2-6", ["2026-03-02T12:00:00+00:00", "2026-03-03T12:00:00+00:00"]),  # MON-FRI
        ("0 0 12 L * ?", ["2026-03-31T12:00:00+01:00", "2026-04-30T12:00:00+01:00"]),  # the last day
        ("0 0 12 15W * ?", ["2026-03-16T12:00:00+00:00", "2026-04-15T12:00:00+01:00"]),  # Sunday 15th: Monday
    ],
)
def test_quartz_day_fields_mean_what_they_mean_in_quartz(expression, expected):
    # Given a Quartz expression (day-of-week 1-7 = SUN-SAT, unlike Unix cron's 0-6)
    # When its fires after 1 March 2026 in Lisbon are computed
    # Then they fall on the days Quartz would fire
    assert fires(expression, "Europe/Lisbon", "2026-03-01T00:00:00", 2) == expected


@pytest.mark.parametrize(
    "expression, problem",
    [
        ("0 0 12 ? * 8", "day-of-week 8: Quartz numbers days 1-7"),
        ("0 0 12 LW * ?", "day-of-month LW is not supported"),
        ("0,5 */2 * * * ?", "fires 5 s apart"),
        ("55,0 * * * * ?", "fires 5 s apart"),  # :55 then :00 of the next minute
        ("0 0 2 * * ? 2020", "never fires again"),
        ("0 0 2", "3 fields; a Quartz expression has 6 or 7"),
    ],
)
def test_expressions_refused_say_why(expression, problem):
    # Given an expression Quartz refuses, or one firing too often or never
    # When it is checked
    # Then the problem says what is wrong
    with pytest.raises(CronProblem, match=problem):
        check_expression(expression)


@pytest.mark.parametrize("expression", ["* * * * * ? 2026-2099", "*/5 * * * * ? 2027", "* 0 3 ? * MON 2028"])
def test_a_seven_field_expression_firing_every_few_seconds_is_refused_by_its_seconds_field(expression):
    # Given a Quartz expression with a year field (the seventh) that fires every second or every 5 s
    # When it is checked, Then its seconds field is what is too frequent (the year field counts for nothing)
    with pytest.raises(CronProblem, match=r"fires [15] s apart; a schedule fires at most every 10 s"):
        check_expression(expression)


@pytest.mark.parametrize(
    "expression, expected",
    [
        ("0 0 2 * * ? 2027", ["2027-01-01T02:00:00+00:00", "2027-01-02T02:00:00+00:00"]),
        ("0 30 9 ? * MON-FRI 2026-2030", ["2026-03-02T09:30:00+00:00", "2026-03-03T09:30:00+00:00"]),
        ("*/10 * * * * ? 2026", ["2026-03-01T00:00:10+00:00", "2026-03-01T00:00:20+00:00"]),
    ],
)
def test_a_valid_seven_field_expression_is_accepted_and_fires_in_its_years(expression, expected):
    # Given a Quartz expression whose seventh field names the years it fires in
    # When it is checked and its fires after 1 March 2026 in Lisbon are computed
    # Then it is accepted, and fires on the seconds, minutes and hours its first fields say, in those years only
    assert check_expression(expression) == expression
    assert fires(expression, "Europe/Lisbon", "2026-03-01T00:00:00", 2) == expected


def test_two_fires_ten_seconds_apart_across_minutes_are_accepted():
    # Given fires at :00 and :50 of every minute (50 s apart within a minute, 10 s from :50 to the next :00)
    # When checked, Then it is accepted: 10 s is the shortest allowed
    assert check_expression("0,50 * * * * ?") == "0,50 * * * * ?"


def test_a_wall_time_that_does_not_exist_fires_after_the_gap_and_a_repeated_one_fires_once():
    # Given 01:30 daily in Lisbon: skipped on 29 March 2026 (01:00 -> 02:00), twice on 25 October (02:00 -> 01:00)
    # When its fires are computed across both changes
    spring = fires("0 30 1 * * ?", "Europe/Lisbon", "2026-03-28T12:00:00", 2)
    autumn = fires("0 30 1 * * ?", "Europe/Lisbon", "2026-10-24T12:00:00", 2)

    # Then the missing time fires at the end of the gap, and the repeated time once
    assert spring == ["2026-03-29T02:00:00+01:00", "2026-03-30T01:30:00+01:00"]
    assert autumn == ["2026-10-25T01:30:00+01:00", "2026-10-26T01:30:00+00:00"]


def test_an_hourly_wildcard_fires_in_the_repeated_hour_too():
    # Given every 30 minutes in Lisbon, Then the hour that happens twice on 25 October 2026 fires twice
    assert fires("0 */30 * * * ?", "Europe/Lisbon", "2026-10-25T00:45:00", 4) == [
        "2026-10-25T01:00:00+01:00",
        "2026-10-25T01:30:00+01:00",
        "2026-10-25T01:00:00+00:00",
        "2026-10-25T01:30:00+00:00",
    ]
