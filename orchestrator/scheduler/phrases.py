"""When, in the words people type: "in 20m", "at 9am", "tomorrow 9:00", "2026-03-01 10:00",
"every weekday at 9". One-shots become an instant in the owner's timezone; "every ..."
becomes a cron expression, so recurring jobs have one implementation.

A request ("call mom in 20m", "in 20m call mom") is split by trying the longest time
phrase at the end, then at the start; the rest is the message.
"""

from __future__ import annotations

import datetime as dt
import re
from contextlib import suppress
from dataclasses import dataclass
from zoneinfo import ZoneInfo

from orchestrator.scheduler.cron import Cron, CronError, parse_cron
from orchestrator.scheduler.localtime import instant_of, local

EXAMPLES = (
    "in 20m · in 2 hours · at 9am · at 18:30 · tomorrow 9:00 · "
    "monday at 10 · 2026-03-01 09:30 · every weekday at 9"
)
DEFAULT_HOUR = 9  # a day without a time ("tomorrow") means the start of a working day

UNIT_SECONDS = {
    "s": 1,
    "sec": 1,
    "secs": 1,
    "second": 1,
    "seconds": 1,
    "m": 60,
    "min": 60,
    "mins": 60,
    "minute": 60,
    "minutes": 60,
    "h": 3600,
    "hr": 3600,
    "hrs": 3600,
    "hour": 3600,
    "hours": 3600,
    "d": 86400,
    "day": 86400,
    "days": 86400,
    "w": 604800,
    "wk": 604800,
    "week": 604800,
    "weeks": 604800,
}
WEEKDAYS = {
    name: i
    for i, names in enumerate(
        (
            ("monday", "mon"),
            ("tuesday", "tue", "tues"),
            ("wednesday", "wed"),
            ("thursday", "thu", "thur", "thurs"),
            ("friday", "fri"),
            ("saturday", "sat"),
            ("sunday", "sun"),
        )
    )
    for name in names
}
MONTHS = {
    name: i + 1
    for i, names in enumerate(
        (
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sep", "sept"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        )
    )
    for name in names
}
STARTERS = {
    "in",
    "at",
    "on",
    "every",
    "today",
    "tonight",
    "tomorrow",
    "next",
    "daily",
    "hourly",
    *WEEKDAYS,
}

AMOUNT = r"(?:\d+(?:\.\d+)?|an?|half\s+an?|one|two|three|four|five|ten|fifteen|twenty|thirty)"
UNIT = "|".join(sorted(UNIT_SECONDS, key=len, reverse=True))
# "(?![a-z])", not "\b": in "1h30m" the unit is followed by a digit, which \b misses.
PIECE = re.compile(rf"({AMOUNT})\s*({UNIT})(?![a-z])")
DURATION = re.compile(rf"^(?:{AMOUNT}\s*(?:{UNIT})(?![a-z])(?:\s*(?:,|and)?\s*)?)+$")
CALENDAR_UNITS = {"d", "day", "days", "w", "wk", "week", "weeks"}
WORD_NUMBERS = {
    "a": 1.0,
    "an": 1.0,
    "one": 1.0,
    "two": 2.0,
    "three": 3.0,
    "four": 4.0,
    "five": 5.0,
    "ten": 10.0,
    "fifteen": 15.0,
    "twenty": 20.0,
    "thirty": 30.0,
}
CLOCK = re.compile(
    r"^(?:(noon|midday)|(midnight)"
    r"|(\d{1,2})(?:[:.h](\d{2}))?\s*(am|pm|a\.m\.|p\.m\.)?)$"
)
ISO_DATE = re.compile(r"^(\d{4})-(\d{2})-(\d{2})$")
ISO_START = re.compile(r"^\d{4}-\d{2}-\d{2}")
ISO_DATETIME = re.compile(r"^(\d{4}-\d{2}-\d{2})[t ](\d{1,2}:\d{2}(?::\d{2})?)$")


class PhraseError(ValueError):
    """Not a time I can read; the message says why and how to say it. ``definite``: it
    surely was meant as a time (a past one, 25:00, 30 February), so a shorter phrase
    inside it must not be read instead ("today at 8" is not "at 8" with "today" as text)."""

    def __init__(self, message: str, *, definite: bool = False) -> None:
        super().__init__(message)
        self.definite = definite


@dataclass(frozen=True, slots=True)
class When:
    at: float | None  # a one-shot's instant (UTC seconds)
    cron: Cron | None  # a recurring job's expression
    spec: str  # the phrase as typed, for listings


@dataclass(frozen=True, slots=True)
class Request:
    message: str
    when: When


def _amount(word: str) -> float:
    word = " ".join(word.split())
    if word.startswith("half"):
        return 0.5
    return WORD_NUMBERS[word] if word in WORD_NUMBERS else float(word)


def parse_duration(text: str) -> tuple[int, float]:
    """(calendar days, seconds): "in 1d" is tomorrow at this wall time, also across a
    DST change, while "in 24h" is 24 elapsed hours."""
    text = text.strip()
    if not DURATION.match(text):
        raise PhraseError(
            f"'{text}' is not a duration I know (like 20m, 2 hours, 1d, 1h30m, half an hour)"
        )
    days, seconds = 0, 0.0
    for amount, unit in PIECE.findall(text):
        value = _amount(amount) * UNIT_SECONDS[unit]
        if unit in CALENDAR_UNITS and value % 86400 == 0:
            days += int(value // 86400)
        else:
            seconds += value
    if days == 0 and seconds <= 0:
        raise PhraseError("a duration of zero is now; say how long, like 'in 5m'", definite=True)
    if days * 86400 + seconds > 5 * 366 * 86400:
        raise PhraseError("that is more than five years away; pick a nearer time", definite=True)
    return days, seconds


def parse_clock(text: str) -> tuple[int, int]:
    m = CLOCK.match(text.strip())
    if not m:
        raise PhraseError(f"'{text}' is not a time of day (like 9am, 18:30, 9:15pm, noon)")
    if m.group(1):
        return 12, 0
    if m.group(2):
        return 0, 0
    hour, minute, half = int(m.group(3)), int(m.group(4) or 0), (m.group(5) or "")
    if half:
        if not 1 <= hour <= 12:
            raise PhraseError(f"'{text}': with am/pm the hour is 1-12", definite=True)
        hour = hour % 12 + (12 if half.startswith("p") else 0)
    if hour > 23 or minute > 59:
        raise PhraseError(
            f"'{text}' is not a time of day (hours 0-23, minutes 0-59)", definite=True
        )
    return hour, minute


def _date(text: str, today: dt.date) -> dt.date | None:
    """A calendar date: ISO, "30 march", "march 30" (the next one that is not past)."""
    m = ISO_DATE.match(text)
    if m:
        try:
            return dt.date(int(m.group(1)), int(m.group(2)), int(m.group(3)))
        except ValueError:
            raise PhraseError(f"{text} is not a date on the calendar", definite=True) from None
    words = text.replace(",", " ").split()
    if len(words) == 2:
        day_word, month_word = words if words[0][:1].isdigit() else words[::-1]
        day_word = re.sub(r"(st|nd|rd|th)$", "", day_word)
        if day_word.isdigit() and month_word in MONTHS:
            for year in (
                today.year,
                today.year + 1,
                today.year + 2,
                today.year + 3,
                today.year + 4,
            ):
                try:
                    date = dt.date(year, MONTHS[month_word], int(day_word))
                except ValueError:
                    continue  # 29 February waits for a leap year
                if date >= today:
                    return date
            raise PhraseError(f"{text} is not a date on the calendar", definite=True)
    return None


def _day(text: str, today: dt.date) -> tuple[dt.date, bool] | None:
    """A day phrase -> (date, flexible). Flexible days (a weekday, or no day at all) move
    on by a week when their time has passed; named dates do not."""
    text = text.removeprefix("on ").strip()
    if text == "today":
        return today, False
    if text == "tonight":
        return today, False
    if text == "tomorrow":
        return today + dt.timedelta(days=1), False
    nxt = text.startswith("next ")
    name = text.removeprefix("next ").strip()
    if name in WEEKDAYS:
        ahead = (WEEKDAYS[name] - today.weekday()) % 7
        if nxt and ahead == 0:
            ahead = 7
        return today + dt.timedelta(days=ahead), not nxt
    date = _date(text, today)
    return (date, False) if date is not None else None


def _one_shot(phrase: str, now: float, tz: ZoneInfo) -> float:
    if phrase.startswith("in "):
        days, seconds = parse_duration(phrase[3:])
        if days:
            wall = local(now, tz).replace(tzinfo=None) + dt.timedelta(days=days)
            return instant_of(wall, tz) + seconds
        return now + seconds
    today = local(now, tz).date()
    m = ISO_DATETIME.match(phrase.removeprefix("at ").removeprefix("on "))
    if m:
        try:
            naive = dt.datetime.fromisoformat(f"{m.group(1)}T{m.group(2)}")
        except ValueError:
            raise PhraseError(f"'{phrase}' is not a real date and time", definite=True) from None
        return _future(instant_of(naive, tz), now, phrase)
    day_text, clock_text = _split_day_clock(phrase)
    day = _day(day_text, today) if day_text else (today, True)
    if day is None:
        raise PhraseError(
            f"'{day_text}' is not a day I know (today, tomorrow, monday, "
            "next friday, 2026-03-01, 30 march)"
        )
    date, flexible = day
    if clock_text:
        hour, minute = parse_clock(clock_text)
    else:
        hour, minute = (20, 0) if day_text == "tonight" else (DEFAULT_HOUR, 0)
    at = instant_of(dt.datetime.combine(date, dt.time(hour, minute)), tz)
    if at <= now and flexible:
        step = 7 if day_text else 1  # "at 9am" after 9am is tomorrow; "monday" is next week
        at = instant_of(
            dt.datetime.combine(date + dt.timedelta(days=step), dt.time(hour, minute)), tz
        )
    return _future(at, now, phrase)


def _future(at: float, now: float, phrase: str) -> float:
    if at <= now:
        raise PhraseError(f"'{phrase}' is already past; pick a time ahead", definite=True)
    return at


def _split_day_clock(phrase: str) -> tuple[str, str]:
    """ "tomorrow at 9", "at 9 tomorrow", "at 18:30 on friday", "monday 10am" -> (day, clock)."""
    m = re.match(r"^(?:at\s+)?(\S+(?:\s*(?:am|pm))?)(?:\s+(?:on\s+)?(.+))?$", phrase)
    if m and phrase.startswith("at ") and CLOCK.match(m.group(1)):
        return (m.group(2) or "").strip(), m.group(1)
    m = re.match(r"^(.+?)\s+(?:at\s+)?(\S+(?:\s*(?:am|pm))?)$", phrase)
    if m and CLOCK.match(m.group(2)) and not ISO_DATE.match(m.group(2)):
        day = m.group(1).strip()
        # "30 march" ends in a word, "march 30" in a number: a number there is the day.
        if not (day in MONTHS and m.group(2).isdigit()):
            return day, m.group(2)
    if phrase.startswith("at "):
        rest = phrase[3:].strip()
        if CLOCK.match(rest) or (re.match(r"^\d", rest) and ":" in rest):
            return "", rest
        return rest, ""
    return phrase, ""


def _every(phrase: str) -> Cron:
    body = phrase.removeprefix("every ").strip()
    if phrase == "hourly":
        return parse_cron("0 * * * *")
    if phrase.startswith("daily"):
        body = "day" + phrase[len("daily") :]
    m = re.match(rf"^(?:({AMOUNT})\s*)?(minutes?|mins?|m|hours?|hrs?|h)$", body)
    if m:
        n = int(_amount(m.group(1))) if m.group(1) else 1
        minutes = m.group(2).startswith("m")
        if n < 1 or n > (59 if minutes else 23) or _amount(m.group(1) or "1") != n:
            raise PhraseError(
                f"'{phrase}': say every 1-59 minutes or every 1-23 hours", definite=True
            )
        if minutes:
            return parse_cron("* * * * *" if n == 1 else f"*/{n} * * * *")
        return parse_cron("0 * * * *" if n == 1 else f"0 */{n} * * *")
    days, _, at = body.partition(" at ")
    hour, minute = parse_clock(at) if at else (DEFAULT_HOUR, 0)
    days = days.strip()
    if days in ("day", "morning"):
        dow = "*"
    elif days in ("weekday", "weekdays", "working day", "workday"):
        dow = "1-5"
    elif days in ("weekend", "weekends", "weekend day"):
        dow = "0,6"
    else:
        names = [d for d in re.split(r"\s*(?:,|and|&)\s*|\s+", days) if d]
        if not names or any(n.rstrip("s") not in WEEKDAYS and n not in WEEKDAYS for n in names):
            raise PhraseError(
                f"'{phrase}' is not a repeat I know (every day at 9, every "
                "weekday at 8:30, every monday and thursday at 17:00, every "
                "15 minutes, every 2 hours)"
            )
        # cron counts Sunday as 0; Python's weekday() counts Monday as 0.
        dow = ",".join(
            str((WEEKDAYS[n if n in WEEKDAYS else n.rstrip("s")] + 1) % 7) for n in names
        )
    return parse_cron(f"{minute} {hour} * * {dow}")


def parse_when(phrase: str, now: float, tz: ZoneInfo) -> When:
    spec = " ".join(phrase.split())
    text = spec.lower()
    if not text:
        raise PhraseError(f"no time given. Say when, like: {EXAMPLES}")
    try:
        if text.startswith(("every ", "daily")) or text == "hourly":
            return When(None, _every(text), spec)
        return When(_one_shot(text, now, tz), None, spec)
    except CronError as err:
        raise PhraseError(str(err), definite=True) from None


def split_request(text: str, now: float, tz: ZoneInfo) -> Request:
    """Message and time from one line: the time phrase at the end, else at the start."""
    words = text.split()
    with suppress(PhraseError):  # only a time: the caller asks what to say then
        return Request("", parse_when(text, now, tz))
    first_error: PhraseError | None = None
    for cut in range(1, len(words)):  # longest time phrase at the end first
        if words[cut].lower() not in STARTERS and not ISO_START.match(words[cut]):
            continue
        try:
            when = parse_when(" ".join(words[cut:]), now, tz)
        except PhraseError as err:
            if err.definite:
                raise
            first_error = first_error or err
            continue
        return Request(_message(words[:cut]), when)
    for cut in range(len(words) - 1, 0, -1):  # then at the start
        if words[0].lower() not in STARTERS and not ISO_START.match(words[0]):
            break
        try:
            when = parse_when(" ".join(words[:cut]), now, tz)
        except PhraseError as err:
            first_error = first_error or err
            continue
        return Request(_message(words[cut:]), when)
    if first_error is not None:
        raise first_error
    raise PhraseError("I couldn't find a time in that; put it at the end.")


def _message(words: list[str]) -> str:
    text = " ".join(words).strip(" ,:;-")
    # "remind me to call mom" reads naturally; the reminder itself is "call mom".
    return (
        re.sub(r"^(?:me\s+)?(?:to|that|about)\s+", "", text, flags=re.IGNORECASE)
        if re.match(r"^(?:me\s+)?(?:to|that|about)\s+\S", text, re.IGNORECASE)
        else re.sub(r"^me\s+", "", text, flags=re.IGNORECASE)
    )
