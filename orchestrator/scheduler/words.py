"""Times said the way a phone should say them: "in 2 hours 5 minutes", "tomorrow 09:00 CET"."""

from __future__ import annotations

import datetime as dt
from zoneinfo import ZoneInfo

from orchestrator.scheduler.localtime import local

UNITS = (("day", 86400), ("hour", 3600), ("minute", 60))


def in_words(seconds: float) -> str:
    """Relative, two units at most: nobody needs "in 2 days 3 hours 4 minutes 5 seconds"."""
    if seconds < 1:
        return "now"
    if seconds < 60:
        n = round(seconds)
        return f"in {n} second{'s' * (n != 1)}"
    # Rounded to the minute first, so 59 min 40 s reads "in 1 hour", not "in 59 minutes".
    left = int(round(seconds / 60) * 60)
    parts: list[str] = []
    for name, size in UNITS:
        count, left = divmod(left, size)
        if count:
            parts.append(f"{count} {name}{'s' * (count != 1)}")
        if len(parts) == 2:
            break
    return "in " + " ".join(parts)


def ago_words(seconds: float) -> str:
    return in_words(seconds)[3:] + " ago" if seconds >= 1 else "just now"


def clock(instant: float, tz: ZoneInfo) -> str:
    return local(instant, tz).strftime("%H:%M")


def when_words(instant: float, now: float, tz: ZoneInfo) -> str:
    """Local date and time relative to today: "today 18:30 CEST", "Mon 31 Mar 09:00 CEST"."""
    at = local(instant, tz)
    today = local(now, tz).date()
    zone = at.tzname() or ""
    hm = at.strftime("%H:%M")
    if at.date() == today:
        day = "today"
    elif at.date() == today + dt.timedelta(days=1):
        day = "tomorrow"
    elif at.year == today.year:
        day = at.strftime("%a %d %b").replace(" 0", " ")
    else:
        day = at.strftime("%a %d %b %Y").replace(" 0", " ")
    return f"{day} {hm} {zone}".strip()


def next_run_words(instant: float, now: float, tz: ZoneInfo) -> str:
    return f"{in_words(instant - now)}: {when_words(instant, now, tz)}"
