"""Webhook mode: setWebhook with the secret on start, updates on the shared HttpServer,
anything without the exact secret header refused with 401."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest

from channels.http import HttpServer
from channels.http_settings import HttpSettings
from channels.telegram import TelegramChannel
from channels.telegram.channel import SECRET_HEADER, Backoff
from core.errors import ConfigError
from orchestrator.supervisor import TaskSupervisor
from tests.channels.telegram.support import OWNER, RecordingSink, settings_for
from tests.fakes.telegram_api import FakeTelegramApi

SECRET = "s3cret_token-XYZ"
PUBLIC = "https://fetch.example.com/telegram/webhook"


@pytest.fixture
async def hooked(
    tg: FakeTelegramApi,
    sink: RecordingSink,
) -> AsyncIterator[tuple[TelegramChannel, str]]:
    http = HttpServer(HttpSettings(port=0))
    channel = TelegramChannel(
        settings_for(tg, mode="webhook", webhook_secret=SECRET),
        http=http,
        public_url=PUBLIC,
        backoff=Backoff(0.05, 0.2),
    )
    await channel.start(sink, TaskSupervisor())
    await http.start()
    try:
        yield channel, http.url + "/telegram/webhook"
    finally:
        await http.stop()
        await channel.stop()


def update(text: str, update_id: int = 900, from_id: int = OWNER) -> dict[str, Any]:
    return {
        "update_id": update_id,
        "message": {
            "message_id": update_id,
            "date": 1700000000,
            "text": text,
            "chat": {"id": from_id, "type": "private"},
            "from": {"id": from_id, "is_bot": False},
        },
    }


async def post(url: str, body: Any, secret: str | None) -> int:
    headers = {SECRET_HEADER: secret} if secret is not None else {}
    async with aiohttp.ClientSession() as s, s.post(url, json=body, headers=headers) as r:
        return r.status


async def test_start_registers_the_webhook_with_its_secret(
    tg: FakeTelegramApi,
    hooked: tuple[TelegramChannel, str],
) -> None:
    channel, _url = hooked
    [call] = await tg.wait_for("setWebhook")
    assert call.params["url"] == PUBLIC and call.params["secret_token"] == SECRET
    assert set(call.params["allowed_updates"]) == {"message", "callback_query"}
    assert not tg.calls_to("getUpdates")
    assert channel.health().startswith("telegram: webhook")


async def test_right_secret_delivers_once(
    sink: RecordingSink,
    hooked: tuple[TelegramChannel, str],
) -> None:
    _channel, url = hooked
    assert await post(url, update("via webhook"), SECRET) == 200
    got = await sink.next()
    assert (got.text, got.message_id, got.from_owner) == ("via webhook", "42:900", True)
    # Telegram retries a delivery it got no 200 for: the same update_id, once only.
    assert await post(url, update("via webhook"), SECRET) == 200
    await sink.nothing()


@pytest.mark.parametrize("secret", [None, "", "wrong", SECRET + "x", SECRET.upper()])
async def test_wrong_or_missing_secret_is_401_and_nothing_arrives(
    sink: RecordingSink,
    hooked: tuple[TelegramChannel, str],
    secret: str | None,
) -> None:
    _channel, url = hooked
    assert await post(url, update("forged", update_id=901), secret) == 401
    await sink.nothing(0.1)


async def test_malformed_body_is_400(hooked: tuple[TelegramChannel, str]) -> None:
    _channel, url = hooked
    headers = {SECRET_HEADER: SECRET, "Content-Type": "application/json"}
    async with aiohttp.ClientSession() as s:
        async with s.post(url, data=b"{not json", headers=headers) as r:
            assert r.status == 400
        async with s.post(url, json=[1, 2], headers=headers) as r:
            assert r.status == 400


async def test_webhook_mode_needs_secret_listener_and_url(tg: FakeTelegramApi) -> None:
    http = HttpServer(HttpSettings(port=0))
    with pytest.raises(ConfigError, match="webhook_secret"):
        TelegramChannel(settings_for(tg, mode="webhook"), http=http, public_url=PUBLIC)
    with pytest.raises(ConfigError, match="webhook_secret"):
        TelegramChannel(
            settings_for(tg, mode="webhook", webhook_secret="has space"),
            http=http,
            public_url=PUBLIC,
        )
    with pytest.raises(ConfigError, match="public https URL"):
        TelegramChannel(settings_for(tg, mode="webhook", webhook_secret=SECRET), http=http)
    with pytest.raises(ConfigError, match=r"telegram\.token"):
        TelegramChannel(settings_for(tg, token=None))
