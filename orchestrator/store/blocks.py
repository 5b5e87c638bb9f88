"""The memory blocks' tables: each block's current version, and every version it had.

A block is keyed by (kind, scope): ``persona`` and ``owner`` with scope ``''``,
``project`` with the repository's name. Every change is a new numbered version (1, 2,
...) with its author and time, a revert included, so nothing is ever overwritten.
``commit`` is a compare-and-swap on the version number: the service computes the new
text from the version it read (an append, a revert, the size limit), and a writer that
lost the race reads again instead of overwriting a change it never saw.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Protocol

from orchestrator.store.engine import Engine


@dataclass(frozen=True, slots=True)
class BlockVersion:
    kind: str
    scope: str
    number: int  # 1 for the first version of this block
    text: str
    author: str  # a subject id (owner, a member), or "fetch for <subject id>"
    change: str  # set | append | clear | revert
    at: float
    restored: int | None = None  # a revert: the version whose text it brought back


class BlockPort(Protocol):
    async def heads(self) -> list[BlockVersion]:
        """Every block's current version (blocks never written are absent)."""

    async def commit(
        self,
        kind: str,
        scope: str,
        *,
        expected: int,
        text: str,
        author: str,
        change: str,
        restored: int | None = None,
        at: float | None = None,
    ) -> BlockVersion | None:
        """Write version ``expected + 1`` if the block is still at ``expected`` (0: never
        written); None, writing nothing, when another writer got there first."""

    async def history(self, kind: str, scope: str, limit: int = 20) -> list[BlockVersion]:
        """The block's versions, newest first, at most ``limit``."""

    async def version(self, kind: str, scope: str, number: int) -> BlockVersion | None:
        """One version of the block, or None if it never had that number."""


_COLUMNS = "kind, scope, number, text, author, change, at, restored"


def _row(r: tuple[object, ...]) -> BlockVersion:
    restored = r[7]
    return BlockVersion(
        str(r[0]),
        str(r[1]),
        int(str(r[2])),
        str(r[3]),
        str(r[4]),
        str(r[5]),
        float(str(r[6])),
        None if restored is None else int(str(restored)),
    )


class SqliteBlocks:
    def __init__(self, db: Engine) -> None:
        self._db = db

    async def heads(self) -> list[BlockVersion]:
        rows = await self._db.conn.execute_fetchall(
            "SELECT v.kind, v.scope, v.number, v.text, v.author, v.change, v.at, v.restored"
            " FROM blocks b JOIN block_versions v"
            " ON v.kind=b.kind AND v.scope=b.scope AND v.number=b.version"
            " ORDER BY b.kind, b.scope"
        )
        return [_row(tuple(r)) for r in rows]

    async def commit(
        self,
        kind: str,
        scope: str,
        *,
        expected: int,
        text: str,
        author: str,
        change: str,
        restored: int | None = None,
        at: float | None = None,
    ) -> BlockVersion | None:
        when = time.time() if at is None else at
        number = expected + 1
        # BEGIN IMMEDIATE holds the write lock from the read on: a second process
        # writing the same block waits, then sees the new version and gets None. An
        # effect: the /blocks message that asked for it is closed with it.
        async with self._db.effect() as conn:
            async with conn.execute(
                "SELECT version FROM blocks WHERE kind=? AND scope=?", (kind, scope)
            ) as cur:
                row = await cur.fetchone()
            if (int(row[0]) if row else 0) != expected:
                return None
            await conn.execute(
                f"INSERT INTO block_versions({_COLUMNS}) VALUES (?,?,?,?,?,?,?,?)",
                (kind, scope, number, text, author, change, when, restored),
            )
            await conn.execute(
                "INSERT INTO blocks(kind, scope, version, updated) VALUES (?,?,?,?)"
                " ON CONFLICT(kind, scope) DO UPDATE SET version=excluded.version,"
                " updated=excluded.updated",
                (kind, scope, number, when),
            )
        return BlockVersion(kind, scope, number, text, author, change, when, restored)

    async def history(self, kind: str, scope: str, limit: int = 20) -> list[BlockVersion]:
        rows = await self._db.conn.execute_fetchall(
            f"SELECT {_COLUMNS} FROM block_versions WHERE kind=? AND scope=?"
            " ORDER BY number DESC LIMIT ?",
            (kind, scope, limit),
        )
        return [_row(tuple(r)) for r in rows]

    async def version(self, kind: str, scope: str, number: int) -> BlockVersion | None:
        rows = list(
            await self._db.conn.execute_fetchall(
                f"SELECT {_COLUMNS} FROM block_versions WHERE kind=? AND scope=? AND number=?",
                (kind, scope, number),
            )
        )
        return _row(tuple(rows[0])) if rows else None
