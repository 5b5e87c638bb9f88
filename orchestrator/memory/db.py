"""Memory's own SQLite file and connection, on one dedicated thread.

Why its own file (``FETCH_HOME/memory/memory.db``): sqlite-vec is a loadable extension,
and this Python's ``sqlite3`` may be built without ``enable_load_extension`` (pyenv's
default); ``pysqlite3`` (its own copy of SQLite) is then used. Two copies of SQLite in
one process must never open the same database file: each keeps its own POSIX locks, and
one closing a descriptor drops the other's locks (sqlite.org/howtocorrupt.html §2.2.1;
the store really did read "file is not a database" when both wrote fetch.db). So memory
writes only memory.db, and reads the conversation log (``messages`` in fetch.db, for
archiving) through a second connection made with the *same* ``sqlite3`` as the store.

Vector scans take milliseconds, which must not queue behind (or in front of) the
store's sub-millisecond writes: hence a thread of its own. Every operation is one
synchronous function run on it, so a transaction never spans an ``await`` and a
cancelled caller cannot leave one open.
"""

from __future__ import annotations

import asyncio
import importlib
import logging
import sqlite3
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path
from types import ModuleType
from typing import Any, TypeVar

from core.errors import StoreError
from orchestrator.memory.schema import migrate

log = logging.getLogger(__name__)
T = TypeVar("T")
BUSY_TIMEOUT_MS = 5000

# The connection object's type differs between sqlite3 and pysqlite3; both are DB-API.
Conn = Any


def _driver() -> tuple[ModuleType, bool]:
    """The sqlite module to use and whether it can load extensions."""
    if hasattr(sqlite3.Connection, "enable_load_extension"):
        return sqlite3, True
    try:
        return importlib.import_module("pysqlite3.dbapi2"), True
    except ImportError:
        return sqlite3, False


def _load_vec(conn: Conn, can_load: bool) -> str | None:
    """Load sqlite-vec; the reason it is unavailable, or None when it loaded."""
    if not can_load:
        return "this Python's sqlite3 cannot load extensions (install pysqlite3-binary)"
    try:
        sqlite_vec = importlib.import_module("sqlite_vec")
    except ImportError:
        return "the sqlite-vec package is not installed"
    try:
        conn.enable_load_extension(True)
        sqlite_vec.load(conn)
        conn.enable_load_extension(False)
        conn.execute("SELECT vec_version()").fetchone()
    except Exception as err:  # each driver raises its own error classes
        return f"sqlite-vec did not load ({err})"
    return None


class MemoryDB:
    def __init__(self, path: Path, log_path: Path, url: str = "") -> None:
        self.path = path
        self.log_path = log_path  # fetch.db: read-only use, with the store's own sqlite3
        # store.url: memory's tables go to that PostgreSQL beside the store's (pg.py),
        # where the conversation log is too; path and log_path are then unused.
        self.url = url
        self.vec_problem: str | None = "not opened"
        self._conn: Conn | None = None
        self._log: Conn | None = None
        self._pool: ThreadPoolExecutor | None = None
        self.errors: tuple[type[Exception], ...] = (sqlite3.Error,)

    @property
    def vec_ok(self) -> bool:
        return self.vec_problem is None

    async def open(self) -> None:
        if self._pool is not None:
            raise StoreError("memory db already open")
        self._pool = ThreadPoolExecutor(1, thread_name_prefix="memory-db")
        try:
            await self._submit(self._open)
        except BaseException:
            await self.close()
            raise

    def _open(self) -> None:
        if self.url:
            self._open_pg()
            return
        driver, can_load = _driver()
        self.errors = (sqlite3.Error, driver.Error)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # check_same_thread off: the connection is only ever used on this one thread, but
        # it is created by the pool's thread and closed by it too (see close).
        conn = driver.connect(str(self.path), isolation_level=None, check_same_thread=False)
        conn.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.execute("PRAGMA foreign_keys=ON")
        # The binary index of 100k memories is ~19 MB: kept in SQLite's own cache it is
        # not copied in from the OS on every search (p90 25 -> 19 ms measured at 100k).
        conn.execute("PRAGMA cache_size=-65536")
        self.vec_problem = _load_vec(conn, can_load)
        if self.vec_problem:
            log.warning("memory: vector search unavailable: %s", self.vec_problem)
        migrate(conn)
        self._conn = conn
        log_conn = sqlite3.connect(
            str(self.log_path), isolation_level=None, check_same_thread=False
        )
        log_conn.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
        log_conn.execute("PRAGMA query_only=ON")
        self._log = log_conn

    def _open_pg(self) -> None:
        import asyncpg

        from orchestrator.memory.pg import PgConn, PgError

        self.errors = (asyncpg.PostgresError, asyncpg.InterfaceError, PgError, OSError)
        conn = PgConn(self.url)
        try:
            migrate(conn)
        except BaseException:
            conn.close()
            raise
        self.vec_problem = None  # PgConn refuses a server without pgvector
        self._conn = self._log = conn

    async def close(self) -> None:
        pool, self._pool = self._pool, None
        if pool is None:
            return
        conns = list({id(c): c for c in (self._conn, self._log) if c is not None}.values())
        self._conn = self._log = None
        loop = asyncio.get_running_loop()
        for conn in conns:
            try:
                await loop.run_in_executor(pool, conn.close)
            except Exception:
                log.exception("memory db close failed")
        pool.shutdown(wait=False)

    async def _submit(self, fn: Callable[[], T]) -> T:
        if self._pool is None:
            raise StoreError("memory db is not open")
        return await asyncio.get_running_loop().run_in_executor(self._pool, fn)

    async def run(self, fn: Callable[..., T], *args: Any) -> T:
        """Run ``fn(conn, *args)`` on the memory thread."""

        def call() -> T:
            if self._conn is None:
                raise StoreError("memory db is not open")
            return fn(self._conn, *args)

        return await self._submit(partial(call))

    async def run_with_log(self, fn: Callable[..., T], *args: Any) -> T:
        """Run ``fn(conn, log_conn, *args)``: memory.db and the conversation log."""

        def call() -> T:
            if self._conn is None or self._log is None:
                raise StoreError("memory db is not open")
            return fn(self._conn, self._log, *args)

        return await self._submit(partial(call))


def write(conn: Conn, fn: Callable[[], T]) -> T:
    """Run ``fn`` inside ``BEGIN IMMEDIATE`` … ``COMMIT`` (rolled back on any error)."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        result = fn()
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")
    return result
