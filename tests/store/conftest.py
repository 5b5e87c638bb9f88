"""The store's ports, once per implementation: SQLite on a real file, in memory, and a
real PostgreSQL (tests/fakes/postgres.py).

A test that takes ``ports`` runs three times (``[sqlite]``, ``[memory]``,
``[postgres]``), so every behaviour it asserts holds for each. ``engine_store`` opens a
``Store`` on one engine, for the contract suites of other families; ``ENGINES`` and
``ALL`` are the parameter lists they use.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from orchestrator.store import Store
from orchestrator.store.inbox import InboxPort
from orchestrator.store.memory import MemoryInbox, MemoryMessages, MemorySessions, MemoryWork
from orchestrator.store.messages import MessagePort
from orchestrator.store.sessions import SessionPort
from orchestrator.store.work import WorkPort

ENGINES = ["sqlite", "postgres"]  # the real databases
ALL = ["sqlite", "memory", "postgres"]  # and the in-memory twins, where a family has one


@asynccontextmanager
async def engine_store(
    engine: str, tmp_path: Path, request: pytest.FixtureRequest
) -> AsyncIterator[Store]:
    """An open ``Store``: SQLite in ``tmp_path``, or a fresh PostgreSQL database."""
    url = str(request.getfixturevalue("pg_url")) if engine == "postgres" else ""
    async with Store(tmp_path / "fetch.db", url) as store:
        yield store


@pytest.fixture(params=ENGINES)
async def any_store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Store]:
    """A ``Store`` on each real engine in turn."""
    async with engine_store(request.param, tmp_path, request) as store:
        yield store


@dataclass(frozen=True, slots=True)
class Ports:
    sessions: SessionPort
    inbox: InboxPort
    messages: MessagePort
    work: WorkPort


@pytest.fixture(params=ALL)
async def ports(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Ports]:
    if request.param == "memory":
        yield Ports(MemorySessions(), MemoryInbox(), MemoryMessages(), MemoryWork())
        return
    async with engine_store(request.param, tmp_path, request) as store:
        yield Ports(store.sessions, store.inbox, store.messages, store.work)
