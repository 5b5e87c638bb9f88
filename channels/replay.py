"""Signed requests already seen, so a captured one cannot be sent again.

A signature covers the timestamp, and a timestamp is accepted only within the window,
so a signature needs remembering only until its timestamp leaves the window: after that
the clock check refuses it anyway. Memory is bounded: when ``capacity`` signatures are
still live, new requests are refused (the caller answers "too many") rather than the
oldest forgotten, because forgetting one would make it replayable.
"""

from __future__ import annotations

import heapq


class ReplayGuard:
    def __init__(self, window: float, capacity: int = 10_000) -> None:
        self._window = window
        self._capacity = capacity
        self._live: set[str] = set()
        self._expiry: list[tuple[float, str]] = []  # heap: (forget at, signature)

    def __len__(self) -> int:
        return len(self._live)

    def _forget_expired(self, now: float) -> None:
        while self._expiry and self._expiry[0][0] <= now:
            _, signature = heapq.heappop(self._expiry)
            self._live.discard(signature)

    def first_use(self, signature: str, stamp: float, now: float) -> bool | None:
        """True the first time ``signature`` (signed at ``stamp``) is seen, False on a
        replay, None when full (nothing is recorded then)."""
        self._forget_expired(now)
        if signature in self._live:
            return False
        if len(self._live) >= self._capacity:
            return None
        self._live.add(signature)
        heapq.heappush(self._expiry, (stamp + self._window + 1, signature))
        return True
