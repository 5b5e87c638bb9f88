"""Memory's own connection to ``fetch.db``, on one dedicated thread.

Why not the store's aiosqlite connection: sqlite-vec is a loadable extension, and this
Python's ``sqlite3`` may be built without ``enable_load_extension`` (pyenv's default);
``pysqlite3`` is then used instead. And vector scans take milliseconds, which must not
queue behind (or in front of) the store's sub-millisecond writes. WAL lets both
connections work on the same file; ``BEGIN IMMEDIATE`` + the busy timeout order writers.

Every operation is one synchronous function run on the thread, so a transaction never
spans an ``await`` and a cancelled caller cannot leave one open.
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

from orchestrator.errors import StoreError
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
    def __init__(self, path: Path) -> None:
        self.path = path
        self.vec_problem: str | None = "not opened"
        self._conn: Conn | None = None
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
        self.vec_problem = _load_vec(conn, can_load)
        if self.vec_problem:
            log.warning("memory: vector search unavailable: %s", self.vec_problem)
        migrate(conn)
        self._conn = conn

    async def close(self) -> None:
        pool, self._pool = self._pool, None
        if pool is None:
            return
        conn, self._conn = self._conn, None
        if conn is not None:
            loop = asyncio.get_running_loop()
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
