"""Signed requests already seen, so a captured one cannot be sent again, kept per client.

A signature covers the timestamp, and a timestamp is accepted only within the window,
so a signature needs remembering only until its timestamp leaves the window: after that
the clock check refuses it anyway. Memory is bounded per client: when a client has
``capacity`` signatures still live, its new requests are refused (the caller answers
"too many") rather than its oldest forgotten, because forgetting one would make it
replayable. Each client has its own cap, so one client's flood never refuses another's
requests; at most ``clients`` clients are remembered at once (one more is refused until
one of theirs expires), which bounds the whole at ``clients * capacity`` signatures.
"""

from __future__ import annotations

import heapq

CAPACITY = 10_000  # live signatures per client
CLIENTS = 32  # clients with live signatures at once


class ReplayGuard:
    def __init__(self, window: float, capacity: int = CAPACITY, clients: int = CLIENTS) -> None:
        self._window = window
        self._capacity = capacity
        self._clients = clients
        self._live: dict[str, set[str]] = {}  # client -> its live signatures
        self._expiry: list[tuple[float, str, str]] = []  # heap: (forget at, client, signature)

    def __len__(self) -> int:
        return sum(len(live) for live in self._live.values())

    def _forget_expired(self, now: float) -> None:
        while self._expiry and self._expiry[0][0] <= now:
            _, client, signature = heapq.heappop(self._expiry)
            live = self._live.get(client)
            if live is not None:
                live.discard(signature)
                if not live:
                    del self._live[client]

    def first_use(self, client: str, signature: str, stamp: float, now: float) -> bool | None:
        """True the first time ``client`` sends ``signature`` (signed at ``stamp``), False
        on a replay, None when that client is full, or a new client when as many as
        allowed are remembered (nothing is recorded then)."""
        self._forget_expired(now)
        live = self._live.get(client)
        if live is not None and signature in live:
            return False
        if live is None:
            if len(self._live) >= self._clients:
                return None
            live = self._live[client] = set()
        if len(live) >= self._capacity:
            return None
        live.add(signature)
        heapq.heappush(self._expiry, (stamp + self._window + 1, client, signature))
        return True
