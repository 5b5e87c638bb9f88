"""The seam between the table families and the database engine under them.

The families (sessions, inbox, messages, work, jobs, grants, ...) hold their SQL and talk
to an :class:`Engine`: SQLite's ``Database`` (``db.py``, the default: one file in the
home) or PostgreSQL's ``PgDatabase`` (``pg.py``, ``store.url: postgresql://…``). Both
offer the same writes (``transaction``, ``effect``, ``write``, ``write_now``,
``write_behind``, ``flush``) and the same connection shape (aiosqlite's): ``execute``
awaited or entered, ``execute_fetchall``, ``executemany``, a cursor with ``rowcount``
and ``lastrowid``. SQL is written once, portable (``ON CONFLICT``, ``?`` placeholders);
where the two dialects must differ, a family asks ``dialect`` (see ``sql.py``).
"""

from __future__ import annotations

from collections.abc import Generator, Iterable
from contextlib import AbstractAsyncContextManager
from typing import Any, Literal, Protocol

Dialect = Literal["sqlite", "postgresql"]


class Cursor(Protocol):
    @property
    def rowcount(self) -> int: ...

    @property
    def lastrowid(self) -> int | None: ...

    async def fetchone(self) -> Any: ...

    async def fetchall(self) -> Iterable[Any]: ...


class Pending(Protocol):
    """What ``execute`` returns: awaited for the cursor, or entered (``async with``)."""

    def __await__(self) -> Generator[Any, None, Cursor]: ...

    async def __aenter__(self) -> Cursor: ...

    async def __aexit__(self, exc_type: Any, exc: Any, tb: Any) -> None: ...


class Conn(Protocol):
    def execute(self, sql: str, parameters: Iterable[Any] | None = None) -> Pending: ...

    async def execute_fetchall(
        self, sql: str, parameters: Iterable[Any] | None = None
    ) -> Iterable[Any]: ...

    async def executemany(self, sql: str, parameters: Iterable[Iterable[Any]]) -> Cursor: ...


class Engine(Protocol):
    """What every table family may use (``Database`` and ``PgDatabase`` both are one)."""

    dialect: Dialect
    # This process's name on the database: '' on SQLite (one process owns the file).
    holder: str
    # No other process used the database when this one opened it: the start-up's
    # recoveries (tasks cut short, open intents, /improve runs) are this process's to do.
    # Always on SQLite (the home's lock makes it so); on PostgreSQL see pg.py.
    alone: bool

    @property
    def conn(self) -> Conn: ...

    async def gone(self, holder: str) -> bool:
        """Whether the process named ``holder`` no longer uses the database (SQLite: the
        only process is this one, so any other name is gone)."""
        ...

    async def open(self) -> None: ...

    async def close(self) -> None: ...

    async def schema_version(self) -> int: ...

    def transaction(self, *, rows_locked: bool = False) -> AbstractAsyncContextManager[Conn]:
        """One transaction. SQLite's takes the file's write lock; PostgreSQL's takes the
        store's advisory lock unless ``rows_locked`` (the statements lock the rows they
        claim themselves, ``FOR UPDATE SKIP LOCKED``: two processes claim side by side)."""
        ...

    def effect(self) -> AbstractAsyncContextManager[Conn]: ...

    async def write_effect(self, sql: str, params: tuple[Any, ...] = ()) -> Cursor: ...

    async def write(self, sql: str, params: tuple[Any, ...] = ()) -> Cursor: ...

    def write_now(self, sql: str, params: tuple[Any, ...]) -> int | None: ...

    def read_now(self, sql: str, params: tuple[Any, ...]) -> list[Any] | None: ...

    def write_behind(self, sql: str, row: tuple[Any, ...]) -> None: ...

    async def flush(self) -> None: ...


__all__ = ["Conn", "Cursor", "Dialect", "Engine", "Pending"]
