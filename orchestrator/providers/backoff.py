"""How long to wait before asking a rate-limited endpoint again.

The endpoint's own ``Retry-After`` (seconds or an HTTP-date; ``retry-after-ms`` too) is
honoured as a floor; without one, capped exponential backoff with jitter ("equal
jitter": half fixed, half random), so many clients limited at once do not all come back
in the same instant.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from email.utils import parsedate_to_datetime


def retry_after(headers: Mapping[str, str] | None, now: float) -> float | None:
    """Seconds the endpoint asked for, None when it asked nothing we can read.
    ``now`` (epoch seconds) turns an HTTP-date into a wait."""
    if not headers:
        return None
    lowered = {k.lower(): v for k, v in headers.items()}
    ms = lowered.get("retry-after-ms")
    if ms is not None:
        try:
            return max(float(ms) / 1000, 0.0)
        except ValueError:
            pass
    raw = lowered.get("retry-after")
    if raw is None:
        return None
    raw = raw.strip()
    try:
        return max(float(raw), 0.0)
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(raw)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:  # an HTTP-date is GMT by definition
        return None
    return max(when.timestamp() - now, 0.0)


@dataclass(frozen=True, slots=True)
class Backoff:
    base: float = 0.5  # the first wait without a Retry-After
    cap: float = 8.0  # no computed wait is longer
    max_wait: float = 30.0  # a Retry-After longer than this: try the next endpoint instead
    rand: Callable[[], float] = random.random

    def wait(self, attempt: int, asked: float | None) -> float | None:
        """The wait before retry number ``attempt`` (1, 2, ...); None: do not wait here
        (the endpoint asked for longer than ``max_wait``)."""
        rand: Callable[[], float] = self.rand
        computed = min(self.cap, self.base * 2.0 ** max(attempt - 1, 0))
        jittered = computed / 2 + rand() * computed / 2
        if asked is None:
            return jittered
        if asked > self.max_wait:
            return None
        # At least what was asked, plus a little jitter (never less: coming back early
        # only earns another 429).
        return float(asked + rand() * min(asked * 0.1, 1.0))
