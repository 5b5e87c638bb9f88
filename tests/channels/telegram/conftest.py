"""Fixtures: a fake Bot API on 127.0.0.1 and channels pointed at it, stopped after."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack
from typing import Any

import pytest

from channels.telegram import TelegramChannel
from channels.telegram.channel import Backoff
from orchestrator.supervisor import TaskSupervisor
from tests.channels.telegram.support import RecordingSink, settings_for
from tests.fakes.telegram_api import FakeTelegramApi


@pytest.fixture
async def tg() -> AsyncIterator[FakeTelegramApi]:
    async with FakeTelegramApi() as fake:
        yield fake


@pytest.fixture
def sink() -> RecordingSink:
    return RecordingSink()


@pytest.fixture
async def make_channel(
    tg: FakeTelegramApi,
    sink: RecordingSink,
) -> AsyncIterator[Callable[..., Any]]:
    """``await make_channel(**kwargs)``: a started polling channel, stopped at teardown."""
    async with AsyncExitStack() as stack:

        async def make(start: bool = True, **kwargs: Any) -> TelegramChannel:
            settings = kwargs.pop("settings", None) or settings_for(tg)
            kwargs.setdefault("poll_timeout", 1)
            kwargs.setdefault("backoff", Backoff(0.05, 0.2))
            channel = TelegramChannel(settings, **kwargs)
            if start:
                await channel.start(sink, TaskSupervisor())
                stack.push_async_callback(channel.stop)
            return channel

        yield make
