"""The one owner of ``fetch.db``: open/close, migrations, and every way to write.

aiosqlite serialises statements on its own thread, but a *transaction* spans several
awaits, so writers also take an asyncio lock; BEGIN IMMEDIATE takes SQLite's write lock
up front, so two processes on the same file queue on the busy timeout instead of
deadlocking on a lock upgrade.

The table families (``sessions``, ``inbox``, ``messages``, ``work``, the scheduler's
jobs) hold their SQL and go through this object; none opens a connection of its own.
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from pathlib import Path
from typing import Any

import aiosqlite

from core.errors import StoreError
from core.events import SessionKey
from core.tasks import cancel_and_wait
from orchestrator.store import once
from orchestrator.store.engine import Dialect
from orchestrator.store.migrations import MIGRATIONS

BUSY_TIMEOUT_MS = 5000
FAST_BUSY_MS = 5  # the event-loop connection never waits longer than this
FAST_BATCH = 64  # a write-behind batch larger than this takes the thread path
# While the file cannot be written (full disk, read-only, locked by another process), the
# writer waits 0.1, 0.2, 0.4 ... 5 s between attempts and says so once per 5 s, keeping
# at most BEHIND_CAP rows: past that the oldest go (the message log is not the durable
# record of a message; the inbox is).
RETRY_FIRST, RETRY_CEILING = 0.1, 5.0
BEHIND_CAP = 10_000
_TRANSIENT = ("full", "disk i/o", "locked", "busy", "readonly", "read-only", "unable to open")
log = logging.getLogger(__name__)


def _transient(err: BaseException) -> bool:
    """A write that may succeed later, unchanged (as opposed to a row SQLite refuses)."""
    if isinstance(err, OSError):
        return True
    return isinstance(err, sqlite3.OperationalError) and any(
        mark in str(err).lower() for mark in _TRANSIENT
    )


def key_str(key: SessionKey) -> str:
    """How every table names a session (``channel:chat``)."""
    return f"{key.channel}:{key.chat}"


class Database:
    dialect: Dialect = "sqlite"
    holder = ""  # one process owns the file (the home's lock says so)
    alone = True

    def __init__(self, path: Path) -> None:
        self.path = path
        self._conn: aiosqlite.Connection | None = None
        self._write_lock = asyncio.Lock()
        # Rows written behind the caller, in batches (the conversation log): each trip to
        # aiosqlite's thread costs ~0.1-0.2 ms, and a command must answer in under 1 ms.
        self._behind: dict[str, list[tuple[Any, ...]]] = {}
        self._behind_wake = asyncio.Event()
        # One flush at a time: a reader's flush must not return while the writer's batch
        # is still on its way through the thread path (the reader would miss its rows).
        self._flush_lock = asyncio.Lock()
        # The writer is the store's own task, not the supervisor's: the supervisor stops
        # first (runs being cancelled still log rows), and the writer must end after the
        # last of them. Started by open, ended (and its rows written) by close.
        self._behind_task: asyncio.Task[None] | None = None
        self._behind_stopping = False
        self._behind_stop = asyncio.Event()  # ends a wait between failed attempts
        self._behind_dropped = 0  # rows dropped over the cap since the last good write
        self.behind_cap, self.retry_first, self.retry_ceiling = (
            BEHIND_CAP,
            RETRY_FIRST,
            RETRY_CEILING,
        )
        self._fast: sqlite3.Connection | None = None

    # -- lifecycle -----------------------------------------------------------------
    async def open(self) -> None:
        if self._conn is not None:
            raise StoreError("store already open")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            conn = await aiosqlite.connect(self.path, isolation_level=None)
        except sqlite3.Error as err:
            raise StoreError(f"cannot open {self.path}: {err}") from err
        self._conn = conn
        try:
            await conn.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
            await conn.execute("PRAGMA journal_mode=WAL")
            # NORMAL is durable across process crashes in WAL mode; only an OS crash
            # can lose the last transactions, which is the usual trade for chat apps.
            await conn.execute("PRAGMA synchronous=NORMAL")
            await conn.execute("PRAGMA foreign_keys=ON")
            await self._migrate()
        except Exception:
            await self.close()
            raise
        # A second connection used on the event loop itself, only for the writes every
        # message waits for (the dedupe row, the done mark, the log batch): ~50 µs, where
        # a trip to aiosqlite's thread costs 0.1-1 ms under load. Its busy timeout is
        # tiny, so it can never stall the loop: when the file is busy the thread path is
        # used.
        fast = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        fast.execute(f"PRAGMA busy_timeout={FAST_BUSY_MS}")
        fast.execute("PRAGMA synchronous=NORMAL")
        # Paid here, not by the first message after start: its first statement reads the
        # schema, and the first write after the last close starts the WAL again, with
        # an fsync of its header and of the folder (~3 ms). Rewriting the version the
        # file already has is that write, and changes nothing.
        # The file busy (another writer holds it), full or read-only: open anyway, as
        # before; the first message waits for the lock, or is told it was not saved.
        with suppress(sqlite3.Error):
            fast.execute("SELECT count(*) FROM sqlite_master").fetchone()
            fast.execute(f"PRAGMA user_version={len(MIGRATIONS)}")
        self._fast = fast
        self._behind_stopping = False
        self._behind_stop.clear()
        self._behind_task = asyncio.get_running_loop().create_task(
            self._behind_writer(), name="store:message-log"
        )

    async def close(self) -> None:
        try:
            await self._stop_writer()
            try:  # the last rows still go in before the file closes
                await self.flush()
            except Exception as err:
                if left := sum(map(len, self._behind.values())):
                    log.warning("message log: %d rows not written before closing (%s)", left, err)
        finally:
            if self._fast is not None:
                self._fast.close()
                self._fast = None
            if self._conn is not None:
                conn, self._conn = self._conn, None
                await conn.close()

    async def _stop_writer(self) -> None:
        """Ask the writer to finish the batch in hand and end, and wait until it has: it
        is not cancelled mid-write. Only if this wait is itself cancelled is it cut."""
        task, self._behind_task = self._behind_task, None
        if task is None:
            return
        self._behind_stopping = True
        self._behind_stop.set()
        self._behind_wake.set()
        try:
            await task
        except Exception:
            log.exception("message log writer failed")
        finally:
            await cancel_and_wait(task)  # a no-op unless the wait above was interrupted

    @property
    def conn(self) -> aiosqlite.Connection:
        """The aiosqlite connection: reads, and SQL inside ``transaction()``."""
        if self._conn is None:
            raise StoreError("store is not open")
        return self._conn

    async def gone(self, holder: str) -> bool:
        return holder != self.holder

    async def _migrate(self) -> None:
        version = await self.schema_version()
        if version > len(MIGRATIONS):
            raise StoreError(
                f"{self.path} has schema version {version}, newer than this Fetch "
                f"({len(MIGRATIONS)}); upgrade Fetch"
            )
        for number, script in enumerate(MIGRATIONS[version:], start=version + 1):
            async with self.transaction() as conn:
                for statement in filter(str.strip, script.split(";")):
                    await conn.execute(statement)
                await conn.execute(f"PRAGMA user_version={number}")

    async def schema_version(self) -> int:
        async with self.conn.execute("PRAGMA user_version") as cur:
            row = await cur.fetchone()
        return int(row[0]) if row else 0

    # -- writes --------------------------------------------------------------------
    @asynccontextmanager
    async def transaction(
        self, *, rows_locked: bool = False
    ) -> AsyncIterator[aiosqlite.Connection]:
        """BEGIN IMMEDIATE: the file's write lock for the whole transaction (``rows_locked``
        matters to PostgreSQL only: SQLite has no row locks)."""
        async with self._write_lock:
            conn = self.conn
            try:
                await conn.execute("BEGIN IMMEDIATE")
                yield conn
            except BaseException:
                # Also when cancelled while BEGIN was in flight: the ROLLBACK is queued on
                # aiosqlite's thread after it, and shielded so it is sent regardless.
                with suppress(sqlite3.OperationalError, asyncio.CancelledError):
                    await asyncio.shield(conn.execute("ROLLBACK"))
                raise
            else:
                await conn.execute("COMMIT")

    @asynccontextmanager
    async def effect(self) -> AsyncIterator[aiosqlite.Connection]:
        """A transaction for a command's effect: the inbound row of the command being
        handled (``once.current()``) is closed in it, so a replay after a kill can never
        do the effect again (``orchestrator/store/once.py``). Outside a command, a plain
        transaction."""
        async with self.transaction() as conn:
            yield conn
            handling = once.current()
            if handling is not None:
                await conn.execute(once.FINISH, handling)

    async def write_effect(self, sql: str, params: tuple[Any, ...] = ()) -> aiosqlite.Cursor:
        """One statement that is a command's effect (see ``effect``)."""
        async with self.effect() as conn:
            return await conn.execute(sql, params)

    async def write(self, sql: str, params: tuple[Any, ...] = ()) -> aiosqlite.Cursor:
        """One statement is its own transaction (autocommit): a single write cannot
        deadlock, and skipping BEGIN/COMMIT saves two trips to aiosqlite's thread."""
        async with self._write_lock:
            return await self.conn.execute(sql, params)

    def write_now(self, sql: str, params: tuple[Any, ...]) -> int | None:
        """For the one statement a message waits for: run it on the loop's own
        connection and return the row count; None when it must go the thread path
        (``write``: a transaction is open on the other connection, or the file is busy).
        Checking the lock and writing happen with no await between: atomic here. Not a
        coroutine on purpose: the fast path costs no extra await."""
        if self._fast is None or self._write_lock.locked():
            return None
        try:
            return int(self._fast.execute(sql, params).rowcount)
        except sqlite3.OperationalError:
            return None

    def read_now(self, sql: str, params: tuple[Any, ...]) -> list[Any] | None:
        """A small read a message waits for (its chat's recent lines), on the loop's
        connection: a WAL reader takes no lock a writer holds, so it costs ~50 µs where
        a trip to aiosqlite's thread wakes that thread (more after a pause). None: take
        the thread path (a transaction is open there, whose rows a read queued behind
        it would see; or the file is busy)."""
        if self._fast is None or self._write_lock.locked():
            return None
        try:
            return self._fast.execute(sql, params).fetchall()
        except sqlite3.OperationalError:
            return None

    # -- write-behind --------------------------------------------------------------
    def write_behind(self, sql: str, row: tuple[Any, ...]) -> None:
        """Queue one row for ``sql``; it is written shortly after, in a batch."""
        self._behind.setdefault(sql, []).append(row)
        self._behind_wake.set()
        self._trim()

    def _trim(self) -> None:
        """Bounded (only while writes fail does the queue grow): the oldest go first."""
        count = sum(map(len, self._behind.values())) - self.behind_cap
        if count <= 0:
            return
        if not self._behind_dropped:
            log.warning(
                "message log: more than %d rows wait for the disk; dropping the "
                "oldest until writes work again (messages themselves are kept "
                "in the inbox)",
                self.behind_cap,
            )
        self._behind_dropped += count
        for sql in list(self._behind):  # statements in the order they were first queued
            rows = self._behind[sql]
            gone = min(count, len(rows))
            del rows[:gone]
            count -= gone
            if not rows:
                del self._behind[sql]
            if not count:
                return

    async def flush(self) -> None:
        """Write every queued row now, each statement's batch all or nothing. A batch a
        storage failure (full disk, busy file) or a cancel kept from being written is
        queued again, ahead of rows queued since; one SQLite refuses is dropped."""
        async with self._flush_lock:
            await self._flush()

    async def _flush(self) -> None:
        pending = list(self._behind.items())
        self._behind = {}
        try:
            while pending:
                sql, rows = pending[0]
                try:
                    if not self._write_fast(sql, rows):
                        async with self.transaction() as conn:
                            await conn.executemany(sql, rows)
                except Exception as err:
                    if not _transient(err):
                        pending.pop(0)  # refused for what it is: retrying cannot help
                    raise
                pending.pop(0)
        finally:
            if pending:
                requeue = dict(pending)
                for sql, rows in self._behind.items():
                    requeue.setdefault(sql, []).extend(rows)
                self._behind = requeue
                self._trim()
                self._behind_wake.set()  # the writer tries them again

    def _write_fast(self, sql: str, rows: list[tuple[Any, ...]]) -> bool:
        """A handful of rows in one transaction on the loop's connection; False when
        they must take the thread path (too many, a transaction open, the file busy or
        failing: the thread path waits properly and reports the error). No await
        inside: nothing can interrupt it half-way."""
        fast = self._fast
        if fast is None or self._write_lock.locked() or len(rows) > FAST_BATCH:
            return False
        try:
            fast.execute("BEGIN IMMEDIATE")
            fast.executemany(sql, rows)
            fast.execute("COMMIT")
        except sqlite3.OperationalError:
            if fast.in_transaction:
                with suppress(sqlite3.Error):
                    fast.execute("ROLLBACK")
            return False
        except BaseException:
            if fast.in_transaction:
                with suppress(sqlite3.Error):
                    fast.execute("ROLLBACK")
            raise
        return True

    async def _behind_writer(self) -> None:
        delay, failed, said = 0.0, 0, -self.retry_ceiling
        loop = asyncio.get_running_loop()
        while not self._behind_stopping:
            await self._behind_wake.wait()
            self._behind_wake.clear()
            if self._behind_stopping:
                return  # close writes what is left
            await asyncio.sleep(0.005)  # gather what arrives with the same message
            try:
                await self.flush()
            except Exception as err:  # nobody awaits this task until close: say it here
                if not _transient(err):
                    log.exception("message log write failed")
                    continue
                failed += 1
                delay = min(max(delay * 2, self.retry_first), self.retry_ceiling)
                if loop.time() - said >= self.retry_ceiling:  # once per longest wait
                    said = loop.time()
                    log.warning(
                        "message log cannot be written (%s); %d attempts failed, "
                        "retrying within %.0fs, rows kept",
                        err,
                        failed,
                        self.retry_ceiling,
                    )
                with suppress(TimeoutError):  # new rows do not cut the wait short
                    await asyncio.wait_for(self._behind_stop.wait(), delay)
                continue
            if failed or self._behind_dropped:
                log.warning(
                    "message log written again after %d failed attempts (%d oldest rows dropped)",
                    failed,
                    self._behind_dropped,
                )
            delay, failed, self._behind_dropped = 0.0, 0, 0
