"""The store on PostgreSQL (``store.url: postgresql://…``): the same engine shape as
SQLite's ``Database`` (``engine.py``), over an asyncpg pool.

How it maps SQLite's behaviour:

* ``?`` placeholders become ``$1, $2 …`` (outside string literals); an ``INSERT`` into a
  table with an identity ``id`` gets ``RETURNING id``, which is the cursor's
  ``lastrowid``. Nothing else is rewritten: the families' SQL is portable.
* A ``transaction()`` takes one advisory lock for the store (``pg_advisory_xact_lock``),
  as SQLite's ``BEGIN IMMEDIATE`` takes the file's write lock: read-then-write
  transactions stay serial across every process on the database. The scheduler's claims
  (``rows_locked=True``) skip it and lock their rows instead (``FOR UPDATE SKIP LOCKED``),
  so two processes claim side by side and never the same run.
* ``write_now`` has no synchronous path here (None: the caller awaits ``write``);
  ``write_behind`` batches rows like SQLite's, retrying while the server is unreachable.
* Inside a transaction, ``conn`` is that transaction's connection (a read there sees its
  own writes); elsewhere each statement takes a pooled connection.

Start-up refusals are one line each (``StoreError``): a URL asyncpg cannot use, a server
that does not answer or refuses the login, a server without pgvector.
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
import socket
import uuid
from collections.abc import AsyncIterator, Generator, Iterable
from contextlib import asynccontextmanager, suppress
from contextvars import ContextVar
from functools import lru_cache
from typing import Any
from urllib.parse import urlsplit

import asyncpg

from core.errors import StoreError
from orchestrator.store import once
from orchestrator.store.engine import Dialect
from orchestrator.store.pg_migrations import PG_MIGRATIONS

log = logging.getLogger(__name__)

# Advisory lock keys (any two fixed numbers): every store transaction, and migrations.
STORE_LOCK = 0x46455443  # "FETC"
MIGRATE_LOCK = 0x46455444
# A process's liveness: the two-key form (its own key space), 1 and the name's hash. A
# hash collision can only make a gone process look alive (its rows wait), never the
# other way round.
LIVE_LOCK = "SELECT pg_advisory_lock(1, hashtext($1))"
TRY_LOCK = "SELECT pg_try_advisory_lock(1, hashtext($1))"
UNLOCK = "SELECT pg_advisory_unlock(1, hashtext($1))"
# Every live process holds this key shared; taking it exclusively at once, before that,
# tells a starting process whether any other one is using the database.
ALIVE_KEY = 0x46455445
# The liveness connection's lease: the server probes it after 10 s of silence, every 5 s,
# and drops it (freeing the process's lock: its work is taken over) after 4 unanswered
# probes. A SIGKILL closes the socket at once; this is for a host that vanished without
# a word (power, network), which the server's defaults would notice after two hours.
LIVE_KEEPALIVE = {
    "tcp_keepalives_idle": "10",
    "tcp_keepalives_interval": "5",
    "tcp_keepalives_count": "4",
}
CONNECT_TIMEOUT = 10.0
POOL_MAX = 10
BEHIND_CAP = 10_000
RETRY_FIRST, RETRY_CEILING = 0.1, 5.0

_TOKENS = re.compile(r"'(?:[^']|'')*'|\?")
_INSERT = re.compile(r"^\s*INSERT\s+INTO\s+(\w+)", re.IGNORECASE)
_ROWS = re.compile(r"^\s*(SELECT|WITH|VALUES)\b|\bRETURNING\b", re.IGNORECASE)


@lru_cache(maxsize=2048)
def placeholders(sql: str) -> str:
    """``?`` → ``$n``, string literals left alone."""
    n = 0

    def one(m: re.Match[str]) -> str:
        nonlocal n
        if m.group(0) != "?":
            return m.group(0)
        n += 1
        return f"${n}"

    return _TOKENS.sub(one, sql)


def where(url: str) -> str:
    """The URL without its password, for messages: ``host:port/db``."""
    try:
        parts = urlsplit(url)
        host = parts.hostname or "localhost"
        port = f":{parts.port}" if parts.port else ""
    except ValueError:
        return "the configured server"
    return f"{host}{port}{parts.path or '/'}"


def _numeric(text: str) -> int | float:
    """SUM over BIGINT is NUMERIC in PostgreSQL; the families expect Python numbers."""
    return int(text) if text.lstrip("-").isdigit() else float(text)


async def _init(conn: asyncpg.Connection) -> None:
    await conn.set_type_codec(
        "numeric", encoder=str, decoder=_numeric, schema="pg_catalog", format="text"
    )


class PgError(StoreError):
    """A statement PostgreSQL refused, or the server went away; the driver's error is
    its cause. A ``StoreError``, so the gateway words it for the phone (store/errors.py)."""


_DRIVER_ERRORS = (asyncpg.PostgresError, asyncpg.InterfaceError, OSError, TimeoutError)


def _wrap(err: BaseException) -> PgError:
    if _transient(err):
        return PgError(f"the PostgreSQL server is unreachable ({_reason(err)})")
    return PgError(f"PostgreSQL refused it: {_reason(err)}")


def _transient(err: BaseException) -> bool:
    """The server is away (restarting, unreachable): the same write may work later."""
    if isinstance(err, PgError) and err.__cause__ is not None:
        err = err.__cause__
    return isinstance(
        err,
        OSError
        | TimeoutError
        | asyncpg.PostgresConnectionError
        | asyncpg.InterfaceError
        | asyncpg.CannotConnectNowError,
    )


class PgCursor:
    """aiosqlite's cursor shape over rows already fetched."""

    def __init__(self, rows: list[Any], rowcount: int, lastrowid: int | None) -> None:
        self._rows = rows
        self._count = rowcount
        self._last = lastrowid

    @property
    def rowcount(self) -> int:
        return self._count

    @property
    def lastrowid(self) -> int | None:
        return self._last

    async def fetchone(self) -> Any:
        return self._rows[0] if self._rows else None

    async def fetchall(self) -> list[Any]:
        return list(self._rows)


class PgPending:
    """``execute``'s result: awaited for the cursor, or entered (``async with``)."""

    def __init__(self, run: Any) -> None:
        self._run = run

    def __await__(self) -> Generator[Any, None, PgCursor]:
        result: PgCursor = yield from self._run.__await__()
        return result

    async def __aenter__(self) -> PgCursor:
        cursor: PgCursor = await self._run
        return cursor

    async def __aexit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        return None


class PgConn:
    """aiosqlite's connection shape: one asyncpg connection (a transaction's), or the
    pool (each statement takes a connection)."""

    def __init__(self, db: PgDatabase, raw: asyncpg.Connection | None) -> None:
        self._db = db
        self._raw = raw
        self.open = True  # a transaction's: False once it ended (a task may outlive it)
        # One statement at a time on a transaction's connection (asyncpg refuses two).
        self._lock = asyncio.Lock()

    def execute(self, sql: str, parameters: Iterable[Any] | None = None) -> PgPending:
        return PgPending(self._execute(sql, tuple(parameters or ())))

    async def execute_fetchall(
        self, sql: str, parameters: Iterable[Any] | None = None
    ) -> list[Any]:
        cursor = await self._execute(sql, tuple(parameters or ()))
        return await cursor.fetchall()

    async def executemany(self, sql: str, parameters: Iterable[Iterable[Any]]) -> PgCursor:
        rows = [tuple(p) for p in parameters]
        if rows:
            await self._on(lambda raw: raw.executemany(placeholders(sql), rows))
        return PgCursor([], -1, None)

    async def _on(self, call: Any) -> Any:
        try:
            if self._raw is not None:
                async with self._lock:
                    return await call(self._raw)
            async with self._db.pool.acquire() as raw:
                return await call(raw)
        except _DRIVER_ERRORS as err:
            raise _wrap(err) from err

    async def _execute(self, sql: str, params: tuple[Any, ...]) -> PgCursor:
        text, returns_id = self._db.statement(sql)
        if returns_id or _ROWS.search(text):
            rows = await self._on(lambda raw: raw.fetch(text, *params))
            last = int(rows[0][0]) if returns_id and rows else None
            return PgCursor(rows, len(rows), last)
        status: str = await self._on(lambda raw: raw.execute(text, *params))
        tail = status.rsplit(" ", 1)[-1]
        return PgCursor([], int(tail) if tail.isdigit() else -1, None)


class PgDatabase:
    dialect: Dialect = "postgresql"

    def __init__(self, url: str, *, pool_max: int = POOL_MAX) -> None:
        self.url = url
        self.where = where(url)
        # This process's name on the database; while it lives, its own connection holds
        # an advisory lock on that name (``gone``: a free lock means the process is gone,
        # and the server frees it the moment the connection drops, SIGKILL included).
        self.holder = f"{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        self._live: asyncpg.Connection | None = None
        # Whether no other Fetch process was using the database when this one opened it
        # (then the start-up's recoveries are this process's; else they are another's
        # live work, left alone).
        self.alone = False
        self._live_lock = asyncio.Lock()
        self._pool_max = pool_max
        self._pool: asyncpg.Pool | None = None
        self._id_tables: frozenset[str] = frozenset()
        self._statements: dict[str, tuple[str, bool]] = {}
        # This instance's open transaction in the current task (a copy may hold two).
        self._tx: ContextVar[PgConn | None] = ContextVar(f"pg_tx_{id(self)}", default=None)
        self._behind: dict[str, list[tuple[Any, ...]]] = {}
        self._behind_wake = asyncio.Event()
        self._behind_stop = asyncio.Event()
        self._behind_task: asyncio.Task[None] | None = None
        self._behind_dropped = 0
        self._flushing = asyncio.Lock()
        self.behind_cap, self.retry_first, self.retry_ceiling = (
            BEHIND_CAP,
            RETRY_FIRST,
            RETRY_CEILING,
        )

    # -- lifecycle -----------------------------------------------------------------
    async def open(self) -> None:
        if self._pool is not None:
            raise StoreError("store already open")
        try:
            pool = await asyncio.wait_for(
                asyncpg.create_pool(
                    self.url,
                    min_size=1,
                    max_size=self._pool_max,
                    init=_init,
                    timeout=CONNECT_TIMEOUT,
                ),
                CONNECT_TIMEOUT + 1,
            )
        except Exception as err:  # every way a connect fails becomes one line
            raise StoreError(
                f"cannot reach PostgreSQL at {self.where} (store.url): {_reason(err)}"
            ) from None
        self._pool = pool
        try:
            await self._prepare()
            self._live = await asyncpg.connect(
                self.url, timeout=CONNECT_TIMEOUT, server_settings=LIVE_KEEPALIVE
            )
            await self._live.execute(LIVE_LOCK, self.holder)
            self.alone = bool(
                await self._live.fetchval("SELECT pg_try_advisory_lock($1)", ALIVE_KEY)
            )
            if self.alone:
                await self._live.execute("SELECT pg_advisory_unlock($1)", ALIVE_KEY)
            await self._live.execute("SELECT pg_advisory_lock_shared($1)", ALIVE_KEY)
        except BaseException:
            if self._live is not None:
                await self._live.close()
                self._live = None
            await pool.close()
            self._pool = None
            raise
        self._behind_stop.clear()
        self._behind_task = asyncio.get_running_loop().create_task(
            self._behind_writer(), name="store:message-log"
        )

    async def _prepare(self) -> None:
        async with self.pool.acquire() as raw:
            try:
                await raw.execute("CREATE EXTENSION IF NOT EXISTS vector")
            except asyncpg.PostgresError as err:
                raise StoreError(
                    f"PostgreSQL at {self.where} has no pgvector (create extension vector: "
                    f"{_reason(err)}); install pgvector on that server"
                ) from None
            await raw.execute("SELECT pg_advisory_lock($1)", MIGRATE_LOCK)
            try:
                await self._migrate(raw)
            finally:
                await raw.execute("SELECT pg_advisory_unlock($1)", MIGRATE_LOCK)
            rows = await raw.fetch(
                "SELECT table_name FROM information_schema.columns WHERE"
                " table_schema = current_schema() AND column_name = 'id'"
                " AND is_identity = 'YES'"
            )
        self._id_tables = frozenset(str(r[0]) for r in rows)
        self._statements.clear()

    async def _migrate(self, raw: asyncpg.Connection) -> None:
        await raw.execute("CREATE TABLE IF NOT EXISTS fetch_schema (version BIGINT NOT NULL)")
        version = int(await raw.fetchval("SELECT COALESCE(MAX(version), 0) FROM fetch_schema"))
        if version > len(PG_MIGRATIONS):
            raise StoreError(
                f"PostgreSQL at {self.where} has schema version {version}, newer than this "
                f"Fetch ({len(PG_MIGRATIONS)}); upgrade Fetch"
            )
        for number, script in enumerate(PG_MIGRATIONS[version:], start=version + 1):
            async with raw.transaction():
                await raw.execute(script)
                await raw.execute("INSERT INTO fetch_schema(version) VALUES ($1)", number)

    async def close(self) -> None:
        try:
            await self._stop_writer()
            try:
                await self.flush()
            except Exception as err:
                if left := sum(map(len, self._behind.values())):
                    log.warning("message log: %d rows not written before closing (%s)", left, err)
        finally:
            if self._live is not None:
                live, self._live = self._live, None
                with suppress(Exception):
                    await live.close()
            if self._pool is not None:
                pool, self._pool = self._pool, None
                await pool.close()

    async def gone(self, holder: str) -> bool:
        """True when no live process holds ``holder``'s advisory lock (taken and given
        back at once to find out). '' (rows from before migration 16) is nobody."""
        if holder == self.holder:
            return False
        if not holder:
            return True
        if self._live is None:
            raise StoreError("store is not open")
        async with self._live_lock:
            free = bool(await self._live.fetchval(TRY_LOCK, holder))
            if free:
                await self._live.execute(UNLOCK, holder)
        return free

    async def _stop_writer(self) -> None:
        task, self._behind_task = self._behind_task, None
        if task is None:
            return
        self._behind_stop.set()
        self._behind_wake.set()
        try:
            await task
        except Exception:
            log.exception("message log writer failed")

    @property
    def pool(self) -> asyncpg.Pool:
        if self._pool is None:
            raise StoreError("store is not open")
        return self._pool

    @property
    def conn(self) -> PgConn:
        """The open transaction's connection in this task, else the pool."""
        self.pool  # noqa: B018 - raises when closed, as SQLite's conn does
        tx = self._tx.get()
        return tx if tx is not None and tx.open else PgConn(self, None)

    async def schema_version(self) -> int:
        async with self.pool.acquire() as raw:
            return int(await raw.fetchval("SELECT COALESCE(MAX(version), 0) FROM fetch_schema"))

    def statement(self, sql: str) -> tuple[str, bool]:
        """The PostgreSQL text of ``sql`` and whether it returns the new row's id."""
        known = self._statements.get(sql)
        if known is not None:
            return known
        if len(self._statements) > 4096:  # bounded, should some SQL carry its values
            self._statements.clear()
        text = placeholders(sql)
        m = _INSERT.match(text)
        returns_id = bool(
            m and m.group(1).lower() in self._id_tables and "RETURNING" not in text.upper()
        )
        if returns_id:
            text += " RETURNING id"
        self._statements[sql] = (text, returns_id)
        return text, returns_id

    # -- writes --------------------------------------------------------------------
    @asynccontextmanager
    async def transaction(self, *, rows_locked: bool = False) -> AsyncIterator[PgConn]:
        async with self.pool.acquire() as raw:
            token = None
            try:
                await raw.execute("BEGIN")
                if not rows_locked:
                    await raw.execute("SELECT pg_advisory_xact_lock($1)", STORE_LOCK)
                conn = PgConn(self, raw)
                token = self._tx.set(conn)
                yield conn
            except BaseException as err:
                with suppress(Exception, asyncio.CancelledError):
                    await asyncio.shield(raw.execute("ROLLBACK"))
                if isinstance(err, _DRIVER_ERRORS):
                    raise _wrap(err) from err
                raise
            else:
                try:
                    await raw.execute("COMMIT")
                except _DRIVER_ERRORS as err:
                    raise _wrap(err) from err
            finally:
                if token is not None:
                    self._tx.get().open = False  # type: ignore[union-attr]
                    self._tx.reset(token)

    @asynccontextmanager
    async def effect(self) -> AsyncIterator[PgConn]:
        """As SQLite's: the handled command's inbound row is closed in the same
        transaction (``once.py``)."""
        async with self.transaction() as conn:
            yield conn
            handling = once.current()
            if handling is not None:
                await conn.execute(once.FINISH, handling)

    async def write_effect(self, sql: str, params: tuple[Any, ...] = ()) -> PgCursor:
        async with self.effect() as conn:
            return await conn.execute(sql, params)

    async def write(self, sql: str, params: tuple[Any, ...] = ()) -> PgCursor:
        """One statement, its own transaction (autocommit)."""
        return await PgConn(self, None).execute(sql, params)

    def write_now(self, sql: str, params: tuple[Any, ...]) -> int | None:
        """No synchronous path to a server: the caller awaits ``write``."""
        return None

    def read_now(self, sql: str, params: tuple[Any, ...]) -> list[Any] | None:
        """No synchronous path to a server: the caller awaits the read."""
        return None

    # -- write-behind --------------------------------------------------------------
    def write_behind(self, sql: str, row: tuple[Any, ...]) -> None:
        self._behind.setdefault(sql, []).append(row)
        self._behind_wake.set()
        self._trim()

    def _trim(self) -> None:
        count = sum(map(len, self._behind.values())) - self.behind_cap
        if count <= 0:
            return
        if not self._behind_dropped:
            log.warning(
                "message log: more than %d rows wait for PostgreSQL; dropping the oldest "
                "until writes work again (messages themselves are kept in the inbox)",
                self.behind_cap,
            )
        self._behind_dropped += count
        for sql in list(self._behind):
            rows = self._behind[sql]
            gone = min(count, len(rows))
            del rows[:gone]
            count -= gone
            if not rows:
                del self._behind[sql]
            if not count:
                return

    async def flush(self) -> None:
        """Every queued row now, each statement's batch all or nothing; a batch the
        server could not take (away, or a cancel) is queued again ahead of newer rows,
        one it refuses is dropped. One flush at a time: a reader's flush waits for the
        writer's batch in flight, so what it reads next includes it."""
        async with self._flushing:
            await self._flush()

    async def _flush(self) -> None:
        pending = list(self._behind.items())
        self._behind = {}
        try:
            while pending:
                sql, rows = pending[0]
                try:
                    async with self.transaction(rows_locked=True) as conn:
                        await conn.executemany(sql, rows)
                except Exception as err:
                    if not _transient(err):
                        pending.pop(0)
                    raise
                pending.pop(0)
        finally:
            if pending:
                requeue = dict(pending)
                for sql, rows in self._behind.items():
                    requeue.setdefault(sql, []).extend(rows)
                self._behind = requeue
                self._trim()
                self._behind_wake.set()

    async def _behind_writer(self) -> None:
        delay, failed = 0.0, 0
        while not self._behind_stop.is_set():
            await self._behind_wake.wait()
            self._behind_wake.clear()
            if self._behind_stop.is_set():
                return  # close writes what is left
            await asyncio.sleep(0.005)  # gather what arrives with the same message
            try:
                await self.flush()
            except Exception as err:
                if not _transient(err):
                    log.exception("message log write failed")
                    continue
                failed += 1
                delay = min(max(delay * 2, self.retry_first), self.retry_ceiling)
                if failed == 1 or delay >= self.retry_ceiling:
                    log.warning("message log cannot be written (%s); retrying, rows kept", err)
                with suppress(TimeoutError):
                    await asyncio.wait_for(self._behind_stop.wait(), delay)
                continue
            if failed or self._behind_dropped:
                log.warning(
                    "message log written again after %d failed attempts (%d rows dropped)",
                    failed,
                    self._behind_dropped,
                )
            delay, failed, self._behind_dropped = 0.0, 0, 0


def _reason(err: BaseException) -> str:
    """The server's or the socket's own words, on one line."""
    if isinstance(err, TimeoutError | asyncio.TimeoutError):
        return f"no answer within {CONNECT_TIMEOUT:.0f} s"
    if isinstance(err, ConnectionRefusedError):
        return "connection refused (is PostgreSQL running there, on that port?)"
    if isinstance(err, ValueError | asyncpg.ClientConfigurationError):
        return f"the URL is not usable ({' '.join(str(err).split())})"
    text = " ".join(str(err).split()) or type(err).__name__
    if isinstance(err, OSError) and err.strerror:
        text = err.strerror
    return text


async def probe(url: str) -> str:
    """``fetch doctor``'s word on the server, read-only: reachable, and pgvector there
    (installed in the database, or available to it)."""
    try:
        conn = await asyncio.wait_for(
            asyncpg.connect(url, timeout=CONNECT_TIMEOUT), CONNECT_TIMEOUT + 1
        )
    except Exception as err:
        return f"ERROR cannot reach it: {_reason(err)}"
    try:
        server = await conn.fetchval("SHOW server_version")
        vector = await conn.fetchval(
            "SELECT COALESCE(installed_version, default_version) FROM pg_available_extensions"
            " WHERE name = 'vector'"
        )
    except Exception as err:
        return f"ERROR {_reason(err)}"
    finally:
        await conn.close()
    if vector is None:
        return f"ERROR PostgreSQL {server} has no pgvector; install it on that server"
    return f"PostgreSQL {server}, pgvector {vector}"


def is_url(target: str) -> bool:
    """Whether ``store.url`` (or a ``fetch store copy`` end) names PostgreSQL."""
    return target.startswith(("postgresql://", "postgres://"))


__all__ = ["PgDatabase", "PgError", "is_url", "placeholders", "probe", "where"]
