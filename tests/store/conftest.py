"""The store's ports, once per implementation: SQLite on a real file, and in memory.

A test that takes ``ports`` runs twice (``[sqlite]`` and ``[memory]``), so every
behaviour it asserts holds for both.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from orchestrator.store import Store
from orchestrator.store.inbox import InboxPort
from orchestrator.store.memory import MemoryInbox, MemoryMessages, MemorySessions, MemoryWork
from orchestrator.store.messages import MessagePort
from orchestrator.store.sessions import SessionPort
from orchestrator.store.work import WorkPort


@dataclass(frozen=True, slots=True)
class Ports:
    sessions: SessionPort
    inbox: InboxPort
    messages: MessagePort
    work: WorkPort


@pytest.fixture(params=["sqlite", "memory"])
async def ports(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Ports]:
    if request.param == "sqlite":
        async with Store(tmp_path / "fetch.db") as store:
            yield Ports(store.sessions, store.inbox, store.messages, store.work)
    else:
        yield Ports(MemorySessions(), MemoryInbox(), MemoryMessages(), MemoryWork())
