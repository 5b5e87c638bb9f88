"""Wall-clock times in the owner's timezone, turned into instants the same way everywhere.

The rule, for reminders and cron alike: a wall time that happens twice (clocks go back)
means its first occurrence; a wall time that never happens (clocks jump forward) means the
moment the clocks jump (02:30 on a spring-forward night in Berlin is 03:00 CEST), which is
also what cron daemons do.
"""

from __future__ import annotations

import datetime as dt
from zoneinfo import ZoneInfo

UTC = dt.UTC


def zone(name: str) -> ZoneInfo:
    return ZoneInfo(name)


def local(instant: float, tz: ZoneInfo) -> dt.datetime:
    return dt.datetime.fromtimestamp(instant, tz)


def exists(naive: dt.datetime, tz: ZoneInfo) -> bool:
    aware = naive.replace(tzinfo=tz, fold=0)
    back = aware.astimezone(UTC).astimezone(tz).replace(tzinfo=None)
    return back == naive.replace(fold=0)


def is_repeated(naive: dt.datetime, tz: ZoneInfo) -> bool:
    """True for the hour that happens twice when clocks go back."""
    first = naive.replace(tzinfo=tz, fold=0).utcoffset()
    second = naive.replace(tzinfo=tz, fold=1).utcoffset()
    return first != second and exists(naive, tz)


def instant_of(naive: dt.datetime, tz: ZoneInfo) -> float:
    """UTC seconds for a wall time (see the module's rule for doubled and missing times)."""
    naive = naive.replace(tzinfo=None, fold=0)
    if exists(naive, tz):
        return naive.replace(tzinfo=tz, fold=0).timestamp()
    # In the gap: the jump lies between the instant read with the offset after it (too
    # early) and the one read with the offset before it (too late). Offsets change at
    # whole seconds, so a binary search over at most a few hours ends in ~14 steps.
    early = naive.replace(tzinfo=tz, fold=1).timestamp()
    late = naive.replace(tzinfo=tz, fold=0).timestamp()
    lo, hi = min(early, late), max(early, late)
    after = dt.datetime.fromtimestamp(hi, tz).utcoffset()
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if dt.datetime.fromtimestamp(mid, tz).utcoffset() == after:
            hi = mid
        else:
            lo = mid
    return float(hi)
