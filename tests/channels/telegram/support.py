"""Helpers shared by the Telegram tests (imported, unlike conftest, by one name only)."""

from __future__ import annotations

import asyncio
from typing import Any

from channels.telegram_settings import TelegramSettings
from core.events import Inbound
from tests.fakes.telegram_api import FakeTelegramApi

OWNER = 42


class RecordingSink:
    """The gateway's place: records every Inbound, in order."""

    def __init__(self) -> None:
        self.got: list[Inbound] = []
        self._queue: asyncio.Queue[Inbound] = asyncio.Queue()

    async def __call__(self, inbound: Inbound) -> None:
        self.got.append(inbound)
        self._queue.put_nowait(inbound)

    async def next(self, timeout: float = 5) -> Inbound:
        return await asyncio.wait_for(self._queue.get(), timeout)

    async def nothing(self, seconds: float = 0.3) -> None:
        try:
            extra = await asyncio.wait_for(self._queue.get(), seconds)
        except TimeoutError:
            return
        raise AssertionError(f"unexpected delivery: {extra!r}")


def settings_for(fake: FakeTelegramApi, **over: Any) -> TelegramSettings:
    base: dict[str, Any] = {
        "enabled": True,
        "token": fake.token,
        "owner_id": str(OWNER),
        "api_base": fake.url,
    }
    base.update(over)
    return TelegramSettings(**base)
