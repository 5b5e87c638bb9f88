"""The ``inbound`` table: the dedupe key of every message and the durable queue.

A message stays ``queued`` until it is handled, so a restart replays it; its
(channel, message id) is never accepted twice.
"""

from __future__ import annotations

import json
import time
from typing import Any, Protocol

from core.events import SessionKey
from orchestrator.store.db import key_str
from orchestrator.store.engine import Engine
from orchestrator.store.once import FINISH


class InboxPort(Protocol):
    async def accept(
        self, channel: str, message_id: str, key: SessionKey, payload: dict[str, Any]
    ) -> bool:
        """Queue an inbound message; False if this (channel, id) was seen before."""

    async def finish(self, channel: str, message_id: str) -> None:
        """The message was handled: it leaves the queue (and stays seen)."""

    async def queued(self) -> list[dict[str, Any]]:
        """Payloads still queued, oldest first: what a restart replays. With several
        processes on one PostgreSQL database: this process's and those of processes that
        are gone (taken over), never a live one's."""

    async def adopt(self) -> list[dict[str, Any]]:
        """Take over the queued messages of processes that are gone (PostgreSQL: a
        process SIGKILLed next to this live one) and return them, oldest first, to be
        replayed; each only to one taker. [] on SQLite (one process owns the file)."""

    async def seen(self, channel: str, message_id: str) -> bool:
        """Whether this (channel, id) was ever accepted."""


ACCEPT = (
    "INSERT INTO inbound(channel, message_id, session, payload, status,"
    " received, holder) VALUES (?,?,?,?, 'queued', ?, ?) ON CONFLICT DO NOTHING"
)


class SqliteInbox:
    def __init__(self, db: Engine) -> None:
        self._db = db

    async def accept(
        self, channel: str, message_id: str, key: SessionKey, payload: dict[str, Any]
    ) -> bool:
        params = (
            channel,
            message_id,
            key_str(key),
            json.dumps(payload),
            time.time(),
            self._db.holder,
        )
        fast = self._db.write_now(ACCEPT, params)
        if fast is not None:
            return fast == 1
        cur = await self._db.write(ACCEPT, params)
        return cur.rowcount == 1

    async def finish(self, channel: str, message_id: str) -> None:
        if self._db.write_now(FINISH, (channel, message_id)) is None:
            await self._db.write(FINISH, (channel, message_id))

    async def queued(self) -> list[dict[str, Any]]:
        if self._db.dialect == "postgresql":
            await self.adopt()  # the gone processes' rows are this process's from here
            rows = await self._db.conn.execute_fetchall(
                "SELECT payload FROM inbound WHERE status='queued' AND holder=? ORDER BY received",
                (self._db.holder,),
            )
            return [json.loads(r[0]) for r in rows]
        async with self._db.conn.execute(
            "SELECT payload FROM inbound WHERE status='queued' ORDER BY received"
        ) as cur:
            return [json.loads(r[0]) for r in await cur.fetchall()]

    async def adopt(self) -> list[dict[str, Any]]:
        """Several processes on one database: a live process's queued rows are its own
        (it is handling them); a gone one's are taken over, one UPDATE per holder guarded
        by that holder, so of two survivors only one matches (the other's UPDATE waits on
        the row locks, then finds them held by the winner)."""
        if self._db.dialect != "postgresql":
            return []
        me = self._db.holder
        rows = await self._db.conn.execute_fetchall(
            "SELECT DISTINCT holder FROM inbound WHERE status='queued' AND holder<>?", (me,)
        )
        taken: list[tuple[float, dict[str, Any]]] = []
        for (holder,) in rows:
            if not await self._db.gone(str(holder)):
                continue
            async with self._db.transaction(rows_locked=True) as conn:
                cur = await conn.execute(
                    "UPDATE inbound SET holder=? WHERE status='queued' AND holder=?"
                    " RETURNING received, payload",
                    (me, holder),
                )
                taken.extend((float(r[0]), json.loads(r[1])) for r in await cur.fetchall())
        taken.sort(key=lambda t: t[0])
        return [payload for _, payload in taken]

    async def seen(self, channel: str, message_id: str) -> bool:
        rows = list(
            await self._db.conn.execute_fetchall(
                "SELECT 1 FROM inbound WHERE channel=? AND message_id=?", (channel, message_id)
            )
        )
        return bool(rows)
