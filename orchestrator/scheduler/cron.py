"""Five-field cron expressions: validated with a helpful error, and stepped through in
the owner's timezone with croniter, DST-correct.

DST: croniter already moves a time that does not exist (clocks jump forward) to the
jump. When clocks go back it would run a fixed-hour job ("30 2 * * *") twice, once in
each copy of the hour; a daily job must run once a day, so the second copy is skipped.
Jobs whose hour field is a wildcard ("*/15 * * * *", "0 * * * *") follow elapsed time and
run in both copies, like cron daemons do.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass
from zoneinfo import ZoneInfo

from croniter import croniter
from croniter.croniter import CroniterError

from orchestrator.scheduler.localtime import instant_of, is_repeated

ALIASES = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}
FIELDS = (
    ("minute", 0, 59),
    ("hour", 0, 23),
    ("day of month", 1, 31),
    ("month", 1, 12),
    ("day of week", 0, 7),
)
EXAMPLE = "/cron 0 9 * * 1-5 check the nightly build of myapp"
FIELD_HELP = (
    "five fields: minute hour day-of-month month day-of-week, e.g. "
    "'0 9 * * 1-5' (weekdays 09:00), '*/15 * * * *' (every 15 min), or "
    "@hourly @daily @weekly @monthly @yearly"
)
NAMES = re.compile(
    r"^(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec|"
    r"sun|mon|tue|wed|thu|fri|sat)$"
)


class CronError(ValueError):
    """A bad expression; the message says what is wrong and shows a good one."""


@dataclass(frozen=True, slots=True)
class Cron:
    expr: str  # always five fields (aliases expanded)

    @property
    def follows_elapsed_time(self) -> bool:
        return self.expr.split()[1].startswith("*")

    def next_after(self, after: float, tz: ZoneInfo) -> float:
        """The first slot strictly after ``after`` (UTC seconds), as UTC seconds."""
        it = croniter(self.expr, dt.datetime.fromtimestamp(after, tz))
        for _ in range(10_000):  # a guard only: every valid expression matches within years
            candidate = it.get_next(dt.datetime)
            when = candidate.timestamp()
            if when <= after:
                continue
            naive = candidate.replace(tzinfo=None)
            if (
                not self.follows_elapsed_time
                and is_repeated(naive, tz)
                and when != instant_of(naive, tz)
            ):
                continue  # the second copy of a repeated hour: already ran in the first
            return when
        raise CronError(f"'{self.expr}' never matches a date")


def parse_cron(text: str) -> Cron:
    raw = " ".join(text.split())
    if not raw:
        raise CronError(f"An empty schedule. Use {FIELD_HELP}. Example: {EXAMPLE}")
    expr = ALIASES.get(raw.lower())
    if expr is None:
        if raw.startswith("@"):
            raise CronError(
                f"I don't know {raw}. Aliases: {', '.join(sorted(ALIASES))}. Example: {EXAMPLE}"
            )
        expr = raw
    fields = expr.split()
    if len(fields) != 5:
        raise CronError(
            f"'{raw}' has {len(fields)} field(s); I need {FIELD_HELP}. Example: {EXAMPLE}"
        )
    for value, (name, lo, hi) in zip(fields, FIELDS, strict=True):
        problem = _field_problem(value.lower(), lo, hi)
        if problem:
            raise CronError(
                f"In '{raw}', the {name} field '{value}' {problem} "
                f"(allowed {lo}-{hi}). Example: {EXAMPLE}"
            )
    try:
        croniter(expr)
    except (CroniterError, ValueError) as err:
        raise CronError(
            f"'{raw}' is not a cron expression I can use ({err}). Example: {EXAMPLE}"
        ) from None
    return Cron(expr)


def _field_problem(value: str, lo: int, hi: int) -> str | None:
    """Why one field is wrong, in words (croniter's own message names no field)."""
    if value in ("*", "?"):
        return None
    for part in value.split(","):
        base, _, step = part.partition("/")
        if step and not (step.isdigit() and int(step) > 0):
            return f"has the step '/{step}'; a step is a whole number above 0"
        if base == "*" or base in ("l",):
            continue
        for bound in base.split("-", 1):
            if bound.isdigit():
                if not lo <= int(bound) <= hi:
                    return f"has {bound}, which is out of range"
            elif not NAMES.match(bound) and not (bound.endswith("l") and bound[:-1].isdigit()):
                return f"has '{bound}', which is not a number"
    return None


def describe(expr: str) -> str:
    """Common shapes in words ("every weekday at 09:00"); anything else as the expression."""
    minute, hour, dom, month, dow = expr.split()
    at = f"at {int(hour):02d}:{int(minute):02d}" if minute.isdigit() and hour.isdigit() else None
    days = {
        "*": "every day",
        "1-5": "every weekday",
        "mon-fri": "every weekday",
        "0,6": "every weekend day",
        "6,0": "every weekend day",
        "sat,sun": "every weekend day",
    }
    names = ["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
    if dom == "*" and month == "*" and at:
        if dow in days:
            return f"{days[dow]} {at}"
        if dow.isdigit():
            return f"every {names[int(dow)]} {at}"
    if dom.isdigit() and month == "*" and dow == "*" and at:
        return f"on day {dom} of every month {at}"
    if hour == "*" and dom == month == dow == "*":
        if minute.isdigit():
            return f"every hour at :{int(minute):02d}"
        if minute.startswith("*/"):
            return f"every {minute[2:]} minutes"
        if minute == "*":
            return "every minute"
    if minute == "0" and hour.startswith("*/") and dom == month == dow == "*":
        return f"every {hour[2:]} hours"
    return f"cron '{expr}'"
