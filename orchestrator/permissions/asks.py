"""An "ask": the owner answers yes or no for someone else, bound like a diff approval
(a nonce, an expiry, and only the owner's answer counts). Kept in memory: a restart
forgets open questions, which then count as no."""

from __future__ import annotations

import secrets
import time
from dataclasses import dataclass

from core.events import SessionKey


@dataclass(frozen=True, slots=True)
class Ask:
    nonce: str
    subject: str
    action: str
    key: SessionKey  # the chat the request came from
    expires_at: float


class Asks:
    def __init__(self, ttl_seconds: float) -> None:
        self._ttl = ttl_seconds
        self._open: dict[str, Ask] = {}

    def open(self, subject: str, action: str, key: SessionKey) -> Ask:
        for ask in self._open.values():  # asking twice sends one question
            if (ask.subject, ask.action, ask.key) == (subject, action, key) and \
                    ask.expires_at > time.time():
                return ask
        ask = Ask(secrets.token_hex(4), subject, action, key, time.time() + self._ttl)
        self._open[ask.nonce] = ask
        return ask

    def take(self, nonce: str) -> Ask | None:
        """The open ask with this nonce, removed; None if unknown or expired."""
        ask = self._open.pop(nonce.strip().lower(), None)
        if ask is None or ask.expires_at < time.time():
            return None
        return ask

    def pending(self) -> list[Ask]:
        now = time.time()
        return [a for a in self._open.values() if a.expires_at >= now]
