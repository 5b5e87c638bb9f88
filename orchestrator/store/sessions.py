"""The ``sessions`` table: each chat's FSM state and its data, one row per session."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any, Protocol

from core.events import SessionKey
from orchestrator.store.db import key_str
from orchestrator.store.engine import Engine


@dataclass(frozen=True, slots=True)
class SessionRow:
    key: SessionKey
    state: str
    data: dict[str, Any]


class SessionPort(Protocol):
    async def load(self, key: SessionKey) -> SessionRow | None:
        """The saved session, or None if this chat has never been saved."""

    async def save(self, key: SessionKey, state: str, data: dict[str, Any]) -> None:
        """Insert or replace the session's state and data (JSON-shaped)."""

    async def in_states(self, states: tuple[str, ...]) -> list[SessionRow]:
        """Every saved session whose state is one of ``states``."""


class SqliteSessions:
    def __init__(self, db: Engine) -> None:
        self._db = db

    async def load(self, key: SessionKey) -> SessionRow | None:
        async with self._db.conn.execute(
            "SELECT state, data FROM sessions WHERE key=?", (key_str(key),)
        ) as cur:
            row = await cur.fetchone()
        if row is None:
            return None
        return SessionRow(key, str(row[0]), json.loads(row[1]))

    async def save(self, key: SessionKey, state: str, data: dict[str, Any]) -> None:
        await self._db.write(
            "INSERT INTO sessions(key, channel, chat, state, data, updated) VALUES"
            " (?,?,?,?,?,?) ON CONFLICT(key) DO UPDATE SET state=excluded.state,"
            " data=excluded.data, updated=excluded.updated",
            (key_str(key), key.channel, key.chat, state, json.dumps(data), time.time()),
        )

    async def in_states(self, states: tuple[str, ...]) -> list[SessionRow]:
        marks = ",".join("?" * len(states))
        async with self._db.conn.execute(
            f"SELECT channel, chat, state, data FROM sessions WHERE state IN ({marks})",
            states,
        ) as cur:
            rows = await cur.fetchall()
        return [SessionRow(SessionKey(r[0], r[1]), r[2], json.loads(r[3])) for r in rows]
