"""Time, the hard parts: DST in Berlin (March and October), Feb 29, month ends, cron lists,
ranges and steps, and the phrases people type, including ones that must be refused."""

from __future__ import annotations

import datetime as dt

import pytest

from orchestrator.scheduler.cron import CronError, describe, parse_cron
from orchestrator.scheduler.localtime import instant_of, local, zone
from orchestrator.scheduler.phrases import PhraseError, split_request
from orchestrator.scheduler.words import in_words, when_words
from tests.scheduler.conftest import BERLIN, berlin

TZ = zone(BERLIN)


def slots(expr: str, after: float, n: int) -> list[str]:
    cron, out = parse_cron(expr), []
    for _ in range(n):
        after = cron.next_after(after, TZ)
        out.append(local(after, TZ).isoformat())
    return out


# -- DST ------------------------------------------------------------------------------


def test_spring_forward_a_missing_time_runs_when_the_clocks_jump() -> None:
    assert slots("30 2 * * *", berlin(2025, 3, 29, 12, 0), 3) == [
        "2025-03-30T03:00:00+02:00",
        "2025-03-31T02:30:00+02:00",
        "2025-04-01T02:30:00+02:00",
    ]
    assert slots("*/15 2 * * *", berlin(2025, 3, 29, 12, 0), 2) == [
        "2025-03-30T03:00:00+02:00",
        "2025-03-31T02:00:00+02:00",
    ]  # once, not four times


def test_spring_forward_hourly_jobs_skip_the_hour_that_does_not_exist() -> None:
    assert slots("0 * * * *", berlin(2025, 3, 30, 0, 30), 3) == [
        "2025-03-30T01:00:00+01:00",
        "2025-03-30T03:00:00+02:00",
        "2025-03-30T04:00:00+02:00",
    ]


def test_fall_back_a_daily_job_runs_once_in_the_repeated_hour() -> None:
    assert slots("30 2 * * *", berlin(2025, 10, 25, 12, 0), 3) == [
        "2025-10-26T02:30:00+02:00",
        "2025-10-27T02:30:00+01:00",
        "2025-10-28T02:30:00+01:00",
    ]


def test_fall_back_hourly_jobs_run_in_both_copies_of_the_hour() -> None:
    assert slots("0 * * * *", berlin(2025, 10, 26, 0, 30), 4) == [
        "2025-10-26T01:00:00+02:00",
        "2025-10-26T02:00:00+02:00",
        "2025-10-26T02:00:00+01:00",
        "2025-10-26T03:00:00+01:00",
    ]


def test_weekday_morning_job_keeps_its_wall_time_across_dst() -> None:
    got = slots("0 9 * * 1-5", berlin(2025, 3, 28, 12, 0), 2)
    assert got == ["2025-03-31T09:00:00+02:00", "2025-04-01T09:00:00+02:00"]
    gap = parse_cron("0 9 * * *")
    first = gap.next_after(berlin(2025, 3, 29, 10, 0), TZ)
    assert gap.next_after(first, TZ) - first == 86400  # 09:00 to 09:00 ...
    assert first - gap.next_after(berlin(2025, 3, 28, 10, 0), TZ) == 23 * 3600  # ... DST day


def test_local_times_that_happen_twice_or_never() -> None:
    assert (
        local(instant_of(dt.datetime(2025, 3, 30, 2, 30), TZ), TZ).isoformat()
        == "2025-03-30T03:00:00+02:00"
    )
    assert (
        local(instant_of(dt.datetime(2025, 10, 26, 2, 30), TZ), TZ).isoformat()
        == "2025-10-26T02:30:00+02:00"
    )


# -- calendar edges and cron syntax ------------------------------------------------------


def test_feb_29_and_month_ends() -> None:
    assert slots("0 9 29 2 *", berlin(2025, 3, 1, 0, 0), 2) == [
        "2028-02-29T09:00:00+01:00",
        "2032-02-29T09:00:00+01:00",
    ]
    assert slots("0 9 31 * *", berlin(2025, 1, 31, 12, 0), 3) == [
        "2025-03-31T09:00:00+02:00",
        "2025-05-31T09:00:00+02:00",
        "2025-07-31T09:00:00+02:00",
    ]
    assert slots("0 9 L * *", berlin(2028, 1, 31, 12, 0), 2) == [
        "2028-02-29T09:00:00+01:00",
        "2028-03-31T09:00:00+02:00",
    ]
    assert slots("0 0 1 * *", berlin(2025, 12, 31, 23, 59), 1) == ["2026-01-01T00:00:00+01:00"]


def test_lists_ranges_steps_names_and_aliases() -> None:
    assert slots("0,30 9-17/4 * * mon-fri", berlin(2025, 3, 7, 16, 0), 4) == [
        "2025-03-07T17:00:00+01:00",
        "2025-03-07T17:30:00+01:00",
        "2025-03-10T09:00:00+01:00",
        "2025-03-10T09:30:00+01:00",
    ]
    assert slots("*/20 * * * *", berlin(2025, 3, 7, 16, 5), 3) == [
        "2025-03-07T16:20:00+01:00",
        "2025-03-07T16:40:00+01:00",
        "2025-03-07T17:00:00+01:00",
    ]
    assert slots("0 12 * jan,jul sun", berlin(2025, 1, 1, 0, 0), 1) == ["2025-01-05T12:00:00+01:00"]
    assert parse_cron("@daily").expr == "0 0 * * *"
    assert parse_cron("@hourly").expr == "0 * * * *"
    assert parse_cron(" @Weekly ").expr == "0 0 * * 0"


@pytest.mark.parametrize(
    ("expr", "says"),
    [
        ("61 * * * *", "minute field '61'"),
        ("0 24 * * *", "hour field '24'"),
        ("0 9 32 * *", "day of month field '32'"),
        ("0 9 * 13 *", "month field '13'"),
        ("0 9 * * 8", "day of week field '8'"),
        ("*/0 * * * *", "step '/0'"),
        ("0 9 * *", "has 4 field(s)"),
        ("0 9 * * * *", "has 6 field(s)"),
        ("@often", "I don't know @often"),
        ("nine * * * *", "not a number"),
        ("", "empty"),
    ],
)
def test_bad_cron_gets_the_reason_and_a_good_example(expr: str, says: str) -> None:
    with pytest.raises(CronError) as err:
        parse_cron(expr)
    assert says in str(err.value)
    assert "Example: /cron 0 9 * * 1-5" in str(err.value)


def test_describe_common_shapes() -> None:
    assert describe("0 9 * * 1-5") == "every weekday at 09:00"
    assert describe("30 7 * * *") == "every day at 07:30"
    assert describe("0 17 * * 4") == "every Thursday at 17:00"
    assert describe("*/15 * * * *") == "every 15 minutes"
    assert describe("0 */2 * * *") == "every 2 hours"
    assert describe("0 9 1 * *") == "on day 1 of every month at 09:00"
    assert describe("5 4 * 2 1") == "cron '5 4 * 2 1'"


# -- phrases ----------------------------------------------------------------------------

NOW = berlin(2025, 3, 29, 10, 15)  # Saturday before the spring change


@pytest.mark.parametrize(
    ("line", "message", "at"),
    [
        ("call mom in 20m", "call mom", "2025-03-29T10:35:00+01:00"),
        ("call mom in 2 hours", "call mom", "2025-03-29T12:15:00+01:00"),
        ("in 2 hours call mom", "call mom", "2025-03-29T12:15:00+01:00"),
        ("me to call mom in half an hour", "call mom", "2025-03-29T10:45:00+01:00"),
        ("stretch in 1h30m", "stretch", "2025-03-29T11:45:00+01:00"),
        ("standup in 1d", "standup", "2025-03-30T10:15:00+02:00"),  # same wall time across DST
        ("standup in 24h", "standup", "2025-03-30T11:15:00+02:00"),  # 24 elapsed hours
        ("pay at 9am", "pay", "2025-03-30T09:00:00+02:00"),  # 9am has passed: tomorrow
        ("pay at 18:30", "pay", "2025-03-29T18:30:00+01:00"),
        ("pay at 6:30pm", "pay", "2025-03-29T18:30:00+01:00"),
        ("pay at noon", "pay", "2025-03-29T12:00:00+01:00"),
        ("pay tomorrow 9:00", "pay", "2025-03-30T09:00:00+02:00"),
        ("pay tomorrow at 2:30", "pay", "2025-03-30T03:00:00+02:00"),  # 02:30 does not exist
        ("pay at 2:30 tomorrow", "pay", "2025-03-30T03:00:00+02:00"),
        ("pay tomorrow", "pay", "2025-03-30T09:00:00+02:00"),
        ("pay tonight", "pay", "2025-03-29T20:00:00+01:00"),
        ("pay monday at 10", "pay", "2025-03-31T10:00:00+02:00"),
        ("pay on friday at 5pm", "pay", "2025-04-04T17:00:00+02:00"),
        ("pay next saturday", "pay", "2025-04-05T09:00:00+02:00"),
        ("pay at 2025-04-01 10:00", "pay", "2025-04-01T10:00:00+02:00"),
        ("pay 2025-04-01T10:00", "pay", "2025-04-01T10:00:00+02:00"),
        ("pay on 2025-04-01", "pay", "2025-04-01T09:00:00+02:00"),
        ("leap day party at 2028-02-29 20:00", "leap day party", "2028-02-29T20:00:00+01:00"),
        ("pay on 31 march at 8", "pay", "2025-03-31T08:00:00+02:00"),
        ("pay on march 31 at 8", "pay", "2025-03-31T08:00:00+02:00"),
        ("pay on 29 feb", "pay", "2028-02-29T09:00:00+01:00"),  # the next Feb 29 there is
    ],
)
def test_one_shot_phrases(line: str, message: str, at: str) -> None:
    request = split_request(line, NOW, TZ)
    assert request.message == message
    assert request.when.at is not None and request.when.cron is None
    assert local(request.when.at, TZ).isoformat() == at


@pytest.mark.parametrize(
    ("line", "expr"),
    [
        ("check build every weekday at 9", "0 9 * * 1-5"),
        ("check build every day at 7:30", "30 7 * * *"),
        ("check build daily at 7", "0 7 * * *"),
        ("water every monday and thursday at 17:00", "0 17 * * 1,4"),
        ("stretch every 15 minutes", "*/15 * * * *"),
        ("stretch every hour", "0 * * * *"),
        ("stretch every 2 hours", "0 */2 * * *"),
        ("relax every weekend at 10am", "0 10 * * 0,6"),
    ],
)
def test_recurring_phrases_become_cron(line: str, expr: str) -> None:
    request = split_request(line, NOW, TZ)
    assert request.when.cron is not None and request.when.cron.expr == expr


@pytest.mark.parametrize(
    ("line", "says"),
    [
        ("x at 25:00", "not a time of day"),
        ("x at 13pm", "with am/pm the hour is 1-12"),
        ("x in 20 parsecs", "not a duration"),
        ("x in 0m", "a duration of zero"),
        ("x in 10 years", "not a duration"),
        ("x in 300 weeks", "more than five years"),
        ("x at 2025-02-30 10:00", "not a real date"),
        ("x at 2027-02-29 10:00", "not a real date"),
        ("x today at 8", "already past"),
        ("x at 2020-01-01 10:00", "already past"),
        ("x on someday", "not a day I know"),
        ("x every fortnight", "not a repeat I know"),
        ("x every 90 minutes", "every 1-59 minutes"),
        ("call mom sometime", "couldn't find a time"),
    ],
)
def test_invalid_phrases_say_why(line: str, says: str) -> None:
    with pytest.raises(PhraseError, match=says):
        split_request(line, NOW, TZ)


def test_words() -> None:
    assert in_words(0.2) == "now"
    assert in_words(5) == "in 5 seconds"
    assert in_words(60) == "in 1 minute"
    assert in_words(3590) == "in 1 hour"
    assert in_words(2 * 86400 + 3 * 3600 + 240) == "in 2 days 3 hours"
    assert when_words(berlin(2025, 3, 29, 18, 30), NOW, TZ) == "today 18:30 CET"
    assert when_words(berlin(2025, 3, 30, 9, 0), NOW, TZ) == "tomorrow 09:00 CEST"
    assert when_words(berlin(2025, 4, 1, 9, 0), NOW, TZ) == "Tue 1 Apr 09:00 CEST"
    assert when_words(berlin(2028, 2, 29, 9, 0), NOW, TZ) == "Tue 29 Feb 2028 09:00 CET"
