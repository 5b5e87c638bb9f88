"""The one way replies leave Fetch, around a channel under test: ``Messenger.send``
renders a reply in the channel's markup and cuts it to the channel's size (channels no
longer split), so chunking is tested through it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from channels.base import Channel
from orchestrator.messenger import Messenger
from orchestrator.store import Journal, Store


@asynccontextmanager
async def messenger_for(channel: Channel, home: Path) -> AsyncIterator[Messenger]:
    async with Store(home / "fetch.db") as store:
        journal = Journal(home / "sessions")
        messenger = Messenger(store, journal)
        messenger.add_channel(channel)
        try:
            yield messenger
        finally:
            journal.close()
