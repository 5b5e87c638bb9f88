"""``Store``: the table families over one connection owner, each seen through its port.

Callers name the family: ``store.sessions.load(key)``, ``store.inbox.accept(...)``,
``store.messages.log(...)``, ``store.work.create_task(...)``. ``store.db`` is the
connection owner itself (the engine: SQLite's ``Database``, or ``PgDatabase`` when
``url`` names PostgreSQL), for modules that own their tables (the scheduler's jobs) and
for tests that inspect the database.
"""

from __future__ import annotations

from pathlib import Path

from orchestrator.store.blocks import BlockPort, SqliteBlocks
from orchestrator.store.db import Database
from orchestrator.store.engine import Engine
from orchestrator.store.inbox import InboxPort, SqliteInbox
from orchestrator.store.links import SqliteLinks
from orchestrator.store.messages import MessagePort, SqliteMessages
from orchestrator.store.outbox import SqliteOutbox
from orchestrator.store.sessions import SessionPort, SqliteSessions
from orchestrator.store.usage import SqliteUsage, UsagePort
from orchestrator.store.work import SqliteWork, WorkPort


class Store:
    def __init__(self, path: Path, url: str = "") -> None:
        """SQLite at ``path``, or the PostgreSQL database ``url`` names (``store.url``)."""
        self.db: Engine = open_engine(path, url)
        self.sessions: SessionPort = SqliteSessions(self.db)
        self.inbox: InboxPort = SqliteInbox(self.db)
        self.messages: MessagePort = SqliteMessages(self.db)
        self.work: WorkPort = SqliteWork(self.db)
        self.blocks: BlockPort = SqliteBlocks(self.db)  # memory blocks (orchestrator/blocks/)
        self.usage: UsagePort = SqliteUsage(self.db)  # the cost ledger (store/usage.py)
        self.outbox = SqliteOutbox(self.db)  # notices and the web chat's keep (outbox.py)
        self.links = SqliteLinks(self.db)  # chats that share a session (/link, links.py)

    async def __aenter__(self) -> Store:
        await self.db.open()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.db.close()

    async def open(self) -> None:
        await self.db.open()

    async def close(self) -> None:
        await self.db.close()


def open_engine(path: Path, url: str = "") -> Engine:
    """The engine for a store: PostgreSQL when ``url`` is set, else SQLite at ``path``
    (asyncpg is imported only then)."""
    if url:
        from orchestrator.store.pg import PgDatabase

        return PgDatabase(url)
    return Database(path)
