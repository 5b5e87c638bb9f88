"""Per-sender rate limits that refuse instead of waiting.

A limit that makes the caller wait holds up whoever called: the channel's event loop
and, behind it, everyone else's messages (the owner's ``/stop`` included). So a message
over the limit is refused at once: not accepted, not queued, not recorded. The sender
is told once per window, not once per refused message (a flood would otherwise be
answered with a flood).

A token bucket per sender: ``rate_per_minute`` tokens, refilled continuously, one per
message (a burst of ``rate_per_minute`` passes, then one every ``60/rate`` seconds).
Only allowed senders get here, so the table is bounded by the allowlist.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum

WINDOW = 60.0


class Verdict(Enum):
    PASS = "pass"
    REFUSE_AND_TELL = "refuse and tell"  # the first refusal in a window
    REFUSE = "refuse"


@dataclass(slots=True)
class _Bucket:
    tokens: float
    at: float
    told_at: float | None = None


class SenderLimits:
    def __init__(self, rate_per_minute: float, clock: Callable[[], float] = time.monotonic) -> None:
        self._capacity = max(1.0, rate_per_minute)
        self._per_second = rate_per_minute / WINDOW
        self._clock = clock
        self._buckets: dict[str, _Bucket] = {}

    def check(self, sender: str) -> Verdict:
        now = self._clock()
        bucket = self._buckets.get(sender)
        if bucket is None:
            bucket = self._buckets[sender] = _Bucket(self._capacity, now)
        bucket.tokens = min(self._capacity, bucket.tokens + (now - bucket.at) * self._per_second)
        bucket.at = now
        if bucket.tokens >= 1.0:
            bucket.tokens -= 1.0
            return Verdict.PASS
        if bucket.told_at is None or now - bucket.told_at >= WINDOW:
            bucket.told_at = now
            return Verdict.REFUSE_AND_TELL
        return Verdict.REFUSE

    def seconds_until_next(self, sender: str) -> float:
        bucket = self._buckets.get(sender)
        if bucket is None or bucket.tokens >= 1.0:
            return 0.0
        return (1.0 - bucket.tokens) / self._per_second
