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
            return await self._adopt()
        async with self._db.conn.execute(
            "SELECT payload FROM inbound WHERE status='queued' ORDER BY received"
        ) as cur:
            return [json.loads(r[0]) for r in await cur.fetchall()]

    async def _adopt(self) -> list[dict[str, Any]]:
        """Several processes on one database: a live process's queued rows are its own
        (it is handling them); a gone one's are taken over, one UPDATE per holder that
        only one taker can win, and replayed with this process's own."""
        rows = await self._db.conn.execute_fetchall(
            "SELECT DISTINCT holder FROM inbound WHERE status='queued'"
        )
        me = self._db.holder
        for (holder,) in rows:
            if holder != me and await self._db.gone(str(holder)):
                await self._db.write(
                    "UPDATE inbound SET holder=? WHERE status='queued' AND holder=?",
                    (me, holder),
                )
        mine = await self._db.conn.execute_fetchall(
            "SELECT payload FROM inbound WHERE status='queued' AND holder=? ORDER BY received",
            (me,),
        )
        return [json.loads(r[0]) for r in mine]

    async def seen(self, channel: str, message_id: str) -> bool:
        rows = list(
            await self._db.conn.execute_fetchall(
                "SELECT 1 FROM inbound WHERE channel=? AND message_id=?", (channel, message_id)
            )
        )
        return bool(rows)
