"""Memory's connection when the store is on PostgreSQL (``store.url: postgresql://…``).

Memory runs every operation as one synchronous function on its own thread (db.py), so
a transaction never spans an ``await`` of the app's loop. On PostgreSQL that thread owns
an event loop of its own and one asyncpg connection on it; :class:`PgConn` gives it the
DB-API shape the memory functions already use (``execute(sql, params)`` returning a
cursor with ``fetchone``/``fetchall``/``rowcount``/``lastrowid``), so items.py and
archive.py keep one control flow for both engines and branch on ``dialect`` only where
the SQL differs (search, vectors, the schema).

Rewriting is small and mechanical: ``?`` → ``$n`` (the store's own ``placeholders``);
``BEGIN IMMEDIATE`` → ``BEGIN`` plus a transaction-scoped advisory lock, so memory's
read-then-write transactions (the duplicate check and its insert) stay serial across
every Fetch process on the database, as SQLite's write lock keeps them; an ``INSERT
INTO memory_items`` gets ``RETURNING id`` for ``lastrowid``.

Vectors cross as float32 bytes on both engines: a binary codec turns them into
pgvector's ``vector`` (a 2-byte dimension, 2 unused bytes, big-endian float32s).
"""

from __future__ import annotations

import asyncio
import re
import struct
import sys
from array import array
from collections.abc import Iterable
from typing import Any

import asyncpg

from orchestrator.store.pg import placeholders, where

# Memory's write transactions: the two-number form, whose keys never meet the store's
# one-number locks (FETC, FETD, its liveness key) nor its (1, name) ones.
MEMORY_LOCK = (0x4D454D4F, 1)  # "MEMO", 1
CONNECT_TIMEOUT = 10.0
_ROWS = re.compile(r"^\s*(SELECT|WITH|VALUES|EXPLAIN)\b|\bRETURNING\b", re.IGNORECASE)
_INSERT_ITEM = re.compile(r"^\s*INSERT\s+INTO\s+memory_items\b", re.IGNORECASE)
_COUNT = re.compile(r"(\d+)\s*$")


def encode_vector(vec: bytes) -> bytes:
    """float32 (native order, as memory stores them) → pgvector's binary format."""
    values = array("f", vec)
    if sys.byteorder == "little":
        values.byteswap()
    return struct.pack(">HH", len(values), 0) + values.tobytes()


def decode_vector(data: bytes) -> bytes:
    dims = struct.unpack(">H", data[:2])[0]
    values = array("f", data[4 : 4 + 4 * dims])
    if sys.byteorder == "little":
        values.byteswap()
    return values.tobytes()


class PgError(Exception):
    """Memory could not reach or use its PostgreSQL (one line, the password left out)."""


class PgCursor:
    def __init__(self, rows: list[Any], rowcount: int, lastrowid: int | None) -> None:
        self._rows = rows
        self.rowcount = rowcount
        self.lastrowid = lastrowid

    def fetchone(self) -> Any:
        return self._rows[0] if self._rows else None

    def fetchall(self) -> list[Any]:
        return self._rows

    def __iter__(self) -> Any:
        return iter(self._rows)


class PgConn:
    """One asyncpg connection driven synchronously from memory's thread."""

    dialect = "postgresql"

    def __init__(self, url: str) -> None:
        self.where = where(url)
        self._loop = asyncio.new_event_loop()
        connect = self._connect(url)
        try:
            self._conn: asyncpg.Connection = self._loop.run_until_complete(connect)
        except BaseException:
            connect.close()  # never started when this thread already runs a loop
            self._loop.close()
            raise

    async def _connect(self, url: str) -> asyncpg.Connection:
        try:
            conn = await asyncpg.connect(url, timeout=CONNECT_TIMEOUT)
        except (OSError, TimeoutError, asyncpg.PostgresError, ValueError) as err:
            raise PgError(f"memory: PostgreSQL at {self.where}: {err}") from None
        try:
            await conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        except asyncpg.PostgresError as err:
            await conn.close()
            raise PgError(
                f"memory: PostgreSQL at {self.where} has no pgvector ({err}); install pgvector"
            ) from None
        await self._codecs(conn)
        # More candidates per HNSW search than the default 40 (a search asks for up to
        # 64); a filtered one (one layer) goes on scanning until it has enough.
        await conn.execute("SET hnsw.ef_search = 100")
        await conn.execute("SET hnsw.iterative_scan = relaxed_order")
        # asyncpg prepares every statement; after five runs PostgreSQL may plan one for
        # any parameter, and a search's plan depends on its words (a rare word: the GIN
        # index; a generic plan guessed a scan of every item at 1M: 140 ms).
        await conn.execute("SET plan_cache_mode = force_custom_plan")
        return conn

    @staticmethod
    async def _codecs(conn: asyncpg.Connection) -> None:
        await conn.set_type_codec(
            "vector",
            schema="public",
            encoder=encode_vector,
            decoder=decode_vector,
            format="binary",
        )

    def recodec(self) -> None:
        """After the vector extension's type is (re)created: asyncpg caches type oids."""
        self._loop.run_until_complete(self._conn.reload_schema_state())
        self._loop.run_until_complete(self._codecs(self._conn))

    def _run(self, coro: Any) -> Any:
        return self._loop.run_until_complete(coro)

    def execute(self, sql: str, parameters: Iterable[Any] = ()) -> PgCursor:
        params = tuple(parameters)
        head = sql.lstrip()[:16].upper()
        if head.startswith("BEGIN"):
            self._run(self._conn.execute("BEGIN"))
            self._run(self._conn.execute("SELECT pg_advisory_xact_lock($1, $2)", *MEMORY_LOCK))
            return PgCursor([], -1, None)
        text = placeholders(sql)
        if _INSERT_ITEM.match(text) and not _ROWS.search(text):
            text += " RETURNING id"
        if _ROWS.search(text):
            rows = list(self._run(self._conn.fetch(text, *params)))
            last = int(rows[-1][0]) if rows and _INSERT_ITEM.match(text) else None
            return PgCursor(rows, len(rows), last)
        status = self._run(self._conn.execute(text, *params))
        found = _COUNT.search(str(status))
        return PgCursor([], int(found.group(1)) if found else -1, None)

    def executemany(self, sql: str, seq: Iterable[Iterable[Any]]) -> PgCursor:
        self._run(self._conn.executemany(placeholders(sql), [tuple(p) for p in seq]))
        return PgCursor([], -1, None)

    def copy_records(self, table: str, records: list[tuple[Any, ...]], columns: list[str]) -> None:
        """Bulk load (COPY … FROM STDIN, binary): the benchmark's 1M rows."""
        self._run(self._conn.copy_records_to_table(table, records=records, columns=columns))

    def close(self) -> None:
        try:
            self._run(self._conn.close(timeout=5))
        finally:
            self._loop.close()
