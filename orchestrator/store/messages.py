"""The ``messages`` table: the conversation log, with the model's token usage.

The log is written behind the reply (``log``): a command must answer in under 1 ms,
and a trip to aiosqlite's thread alone can cost that under load.
"""

from __future__ import annotations

import time
from typing import NamedTuple, Protocol

from core.events import SessionKey
from orchestrator.store.db import key_str
from orchestrator.store.engine import Engine


class Line(NamedTuple):
    """One logged message: who said it too (``sender`` '' for Fetch's own lines)."""

    id: int
    direction: str
    text: str
    sender: str


class MessagePort(Protocol):
    async def add(
        self,
        key: SessionKey,
        direction: str,
        text: str,
        *,
        model: str | None = None,
        tokens_in: int = 0,
        tokens_out: int = 0,
        sender: str = "",
    ) -> int:
        """Write one log row now; returns its id. ``sender``: who said an inbound line
        (a subject id: ``owner``, a member's name, an allowlist entry)."""

    def log(
        self,
        key: SessionKey,
        direction: str,
        text: str,
        *,
        model: str | None = None,
        tokens_in: int = 0,
        tokens_out: int = 0,
        sender: str = "",
    ) -> None:
        """Queue one log row; it is written shortly after, in a batch."""

    async def flush(self) -> None:
        """Write every queued row now."""

    async def token_totals(self, key: SessionKey) -> tuple[int, int]:
        """Tokens (in, out) the orchestrator model used in this chat."""

    async def recent(self, key: SessionKey, limit: int) -> list[tuple[int, str, str]]:
        """The chat's last ``limit`` messages in and out (id, direction, text), oldest
        first, queued rows included."""

    async def recent_lines(self, key: SessionKey, limit: int) -> list[Line]:
        """As ``recent``, with who said each line (``sender``; '' for Fetch's own)."""


INSERT = (
    "INSERT INTO messages(session, direction, text, ts, model, tokens_in,"
    " tokens_out, sender) VALUES (?,?,?,?,?,?,?,?)"
)


class SqliteMessages:
    def __init__(self, db: Engine) -> None:
        self._db = db
        self._totals: dict[str, list[int]] = {}  # session -> [in, out], once read

    async def add(
        self,
        key: SessionKey,
        direction: str,
        text: str,
        *,
        model: str | None = None,
        tokens_in: int = 0,
        tokens_out: int = 0,
        sender: str = "",
    ) -> int:
        cur = await self._db.write(
            INSERT,
            (key_str(key), direction, text, time.time(), model, tokens_in, tokens_out, sender),
        )
        return int(cur.lastrowid or 0)

    def log(
        self,
        key: SessionKey,
        direction: str,
        text: str,
        *,
        model: str | None = None,
        tokens_in: int = 0,
        tokens_out: int = 0,
        sender: str = "",
    ) -> None:
        session = key_str(key)
        self._db.write_behind(
            INSERT, (session, direction, text, time.time(), model, tokens_in, tokens_out, sender)
        )
        totals = self._totals.get(session)
        if totals is not None:
            totals[0] += tokens_in
            totals[1] += tokens_out

    async def flush(self) -> None:
        await self._db.flush()

    async def token_totals(self, key: SessionKey) -> tuple[int, int]:
        """Read once, then kept current by ``log``."""
        cached = self._totals.get(key_str(key))
        if cached is not None:
            return cached[0], cached[1]
        await self._db.flush()
        rows = list(
            await self._db.conn.execute_fetchall(
                "SELECT COALESCE(SUM(tokens_in),0), COALESCE(SUM(tokens_out),0) FROM messages"
                " WHERE session=? AND (tokens_in > 0 OR tokens_out > 0)",
                (key_str(key),),
            )
        )
        totals = [int(rows[0][0]), int(rows[0][1])] if rows else [0, 0]
        self._totals.setdefault(key_str(key), totals)
        return totals[0], totals[1]

    async def recent(self, key: SessionKey, limit: int) -> list[tuple[int, str, str]]:
        await self._db.flush()  # the rows written behind belong to the conversation too
        rows = await self._db.conn.execute_fetchall(
            "SELECT id, direction, text FROM messages WHERE session=? AND direction IN"
            " ('in','out') ORDER BY id DESC LIMIT ?",
            (key_str(key), limit),
        )
        return [(int(r[0]), str(r[1]), str(r[2])) for r in reversed(list(rows))]

    async def recent_lines(self, key: SessionKey, limit: int) -> list[Line]:
        await self._db.flush()
        sql = (
            "SELECT id, direction, text, sender FROM messages WHERE session=? AND direction IN"
            " ('in','out') ORDER BY id DESC LIMIT ?"
        )
        params = (key_str(key), limit)
        rows = self._db.read_now(sql, params)
        if rows is None:
            rows = list(await self._db.conn.execute_fetchall(sql, params))
        return [Line(int(r[0]), str(r[1]), str(r[2]), str(r[3])) for r in reversed(list(rows))]
