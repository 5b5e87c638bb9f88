"""Outbound pacing: a minimum gap between sends and a hard cap per rolling minute.

WhatsApp bans numbers that send like bulk senders. Not aiolimiter: its leaky bucket
lets a full bucket through at once and then refills it, so ``AsyncLimiter(12, 60)``
allows up to 23 sends in the first minute (measured: ``AsyncLimiter(4, 1)`` let 7
through in one second). A cap that the ban heuristics cannot see through must count
the sends in the last 60 seconds, which is what this does. Clock and sleep are
injectable so tests run on a fake clock.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Awaitable, Callable

Clock = Callable[[], float]
Sleep = Callable[[float], Awaitable[None]]


class Pacer:
    def __init__(
        self,
        min_interval: float,
        per_window: int,
        window: float = 60.0,
        *,
        clock: Clock = time.monotonic,
        sleep: Sleep = asyncio.sleep,
    ) -> None:
        if per_window < 1:
            raise ValueError("per_window must be at least 1")
        self.min_interval = min_interval
        self.per_window = per_window
        self.window = window
        self._clock = clock
        self._sleep = sleep
        self._sent: deque[float] = deque()  # start times of recent sends
        self._lock = asyncio.Lock()  # one waiter at a time keeps sends in call order

    def delay(self) -> float:
        """Seconds until the next send is allowed (0 = now)."""
        now = self._clock()
        while self._sent and now - self._sent[0] >= self.window:
            self._sent.popleft()
        wait = 0.0
        if self._sent:
            wait = self._sent[-1] + self.min_interval - now
        if len(self._sent) >= self.per_window:
            wait = max(wait, self._sent[0] + self.window - now)
        return max(wait, 0.0)

    async def acquire(self) -> float:
        """Wait for a slot and take it; returns how long it waited."""
        async with self._lock:
            waited = 0.0
            while (wait := self.delay()) > 0:
                await self._sleep(wait)
                waited += wait
            self._sent.append(self._clock())
            return waited
