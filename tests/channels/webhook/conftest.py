"""Fixtures: the webhook channel on a real HttpServer (127.0.0.1, ephemeral port)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from channels.http import HttpServer
from channels.http_settings import HttpSettings
from channels.webhook import WebhookChannel
from channels.webhook_settings import WebhookSettings
from orchestrator.supervisor import TaskSupervisor
from tests.channels.telegram.support import RecordingSink
from tests.channels.webhook.support import SECRET, Client, Hook


@pytest.fixture
async def hook() -> AsyncIterator[Hook]:
    http = HttpServer(HttpSettings(port=0))
    channel = WebhookChannel(
        WebhookSettings(enabled=True, secret=SECRET, max_body_bytes=2048), http, settle=0.2
    )
    sink = RecordingSink()
    await channel.start(sink, TaskSupervisor())
    await http.start()
    try:
        yield Hook(channel, sink, Client(http.url))
    finally:
        await http.stop()
        await channel.stop()
