"""Connection state for /status, and the reconnect backoff.

The state comes from real traffic and events, not from a guess: ``Connected`` /
``Disconnected`` / keepalive events, the time of the last message in and out, and a
periodic ``is_connected`` probe. An *alert* (logged out, banned, session replaced,
client outdated) is sticky: it stays in ``line()`` until Fetch restarts, because each
needs the owner to act.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Backoff:
    """Delays between forced reconnects: initial, x factor, capped. The first delay also
    gives whatsmeow's own automatic reconnect (2 s, 4 s, ...) its chance first."""

    initial: float = 10.0
    factor: float = 2.0
    maximum: float = 300.0

    def delays(self) -> Iterator[float]:
        delay = self.initial
        while True:
            yield delay
            delay = min(delay * self.factor, self.maximum)


def _ago(seconds: float) -> str:
    if seconds < 90:
        return f"{int(seconds)}s ago"
    if seconds < 90 * 60:
        return f"{int(seconds // 60)}m ago"
    if seconds < 36 * 3600:
        return f"{int(seconds // 3600)}h ago"
    return f"{int(seconds // 86400)}d ago"


class ConnectionHealth:
    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self._clock = clock
        self.state = "stopped"  # stopped|connecting|connected|degraded|reconnecting|not paired
        self.alert: str | None = None
        self.last_in: float | None = None
        self.last_out: float | None = None
        self.connected_since: float | None = None
        self.attempt = 0
        self.last_error: str | None = None
        # The newest QR payload WhatsApp sent while asking to be linked (the dashboard
        # draws it); cleared once connected.
        self.qr: str | None = None

    @property
    def connected(self) -> bool:
        return self.state == "connected"

    def set(self, state: str, error: str | None = None) -> None:
        if state == "connected":
            if self.state != "connected":
                self.connected_since = self._clock()
            self.attempt = 0
            self.last_error = None
            self.qr = None
        elif error is not None:
            self.last_error = error
        self.state = state

    def inbound(self) -> None:
        self.last_in = self._clock()

    def outbound(self) -> None:
        self.last_out = self._clock()

    def line(self) -> str:
        now = self._clock()
        if self.alert:
            return f"whatsapp: ⚠️ {self.alert}"
        parts = [self.state]
        if self.state == "reconnecting" and self.attempt:
            parts.append(f"attempt {self.attempt}")
        if self.last_error and self.state != "connected":
            parts.append(f"last error: {self.last_error}")
        parts.append("last in " + (_ago(now - self.last_in) if self.last_in else "never"))
        parts.append("last out " + (_ago(now - self.last_out) if self.last_out else "never"))
        return "whatsapp: " + " · ".join(parts)
