"""An "ask": the owner answers yes or no for someone else, bound like a diff approval
(a nonce, an expiry, and only the owner's answer counts). Rows live in ``asks``
(fetch.db, migration 7) and in memory: a restart keeps open questions, so the owner's
``/grants yes <nonce>`` still answers one; an answer after the expiry is refused."""

from __future__ import annotations

import secrets
import time
from dataclasses import dataclass

from core.events import SessionKey
from orchestrator.store.engine import Engine

# An expired question is kept this long after its expiry, so a late answer hears "it
# expired" rather than "no such question"; then it goes at the next start.
KEEP_EXPIRED_SECONDS = 7 * 24 * 3600


@dataclass(frozen=True, slots=True)
class Ask:
    nonce: str
    subject: str
    action: str
    key: SessionKey  # the chat the request came from
    expires_at: float

    def expired(self, now: float) -> bool:
        return self.expires_at < now


class Asks:
    def __init__(self, ttl_seconds: float, db: Engine) -> None:
        self._ttl = ttl_seconds
        self._db = db
        self._open: dict[str, Ask] = {}

    async def load(self) -> None:
        await self._db.write(
            "DELETE FROM asks WHERE expires < ?", (time.time() - KEEP_EXPIRED_SECONDS,)
        )
        rows = await self._db.conn.execute_fetchall(
            "SELECT nonce, subject, action, channel, chat, expires FROM asks"
        )
        self._open = {
            str(r[0]): Ask(
                str(r[0]), str(r[1]), str(r[2]), SessionKey(str(r[3]), str(r[4])), float(r[5])
            )
            for r in rows
        }

    async def open(self, subject: str, action: str, key: SessionKey) -> Ask:
        now = time.time()
        for ask in self._open.values():  # asking twice sends one question
            if (ask.subject, ask.action, ask.key) == (subject, action, key) and not ask.expired(
                now
            ):
                return ask
        ask = Ask(secrets.token_hex(4), subject, action, key, now + self._ttl)
        await self._db.write(
            "INSERT INTO asks(nonce, subject, action, channel, chat, created, expires)"
            " VALUES (?,?,?,?,?,?,?)",
            (ask.nonce, subject, action, key.channel, key.chat, now, ask.expires_at),
        )
        self._open[ask.nonce] = ask
        return ask

    def peek(self, nonce: str) -> Ask | None:
        """The open ask with this nonce, left open; None if unknown."""
        return self._open.get(nonce.strip().lower())

    async def take(self, nonce: str) -> Ask | None:
        """The ask with this nonce, removed (answered once, whatever the answer); None
        if unknown. The caller refuses one that has ``expired``. An effect: the
        /grants message that answered it is closed with the row (store/once.py)."""
        ask = self.peek(nonce)
        if ask is not None:  # the row first: a failed write leaves the question open
            await self._db.write_effect("DELETE FROM asks WHERE nonce=?", (ask.nonce,))
            self.taken(ask.nonce)
        return ask

    def taken(self, nonce: str) -> None:
        """Its row was deleted with the grant that answered it (``Grants.add``)."""
        self._open.pop(nonce, None)

    def pending(self) -> list[Ask]:
        now = time.time()
        return [a for a in self._open.values() if not a.expired(now)]
