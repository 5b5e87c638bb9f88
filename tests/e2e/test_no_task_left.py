"""Every background task is the supervisor's, and stopping the app ends all of them: the
whole app with the terminal (reading stdin), the webhook, Telegram (the fake Bot API)
and the scheduler, some traffic on each, then stop; nothing Fetch started is left."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable

import aiohttp
import pytest

from channels.http import HttpServer
from channels.http.auth import TOKEN_FILE, WebAuth
from channels.http_settings import HttpSettings
from channels.telegram import TelegramChannel
from channels.telegram.channel import Backoff
from channels.terminal import TerminalChannel
from channels.web import WebChatChannel
from channels.webchat_settings import WebChatSettings
from channels.webhook import WebhookChannel
from channels.webhook_settings import WebhookSettings
from core.events import SessionKey
from orchestrator.app import App
from orchestrator.config import Settings
from tests.channels.keyboard import keyboard
from tests.channels.telegram.support import OWNER, settings_for
from tests.channels.webhook.support import SECRET, Client
from tests.fakes.telegram_api import FakeTelegramApi


async def test_stop_leaves_no_task_behind(
    make_settings: Callable[..., Settings],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    before = asyncio.all_tasks()
    with keyboard(monkeypatch) as typed:  # the owner's keyboard: open until the test ends
        async with FakeTelegramApi() as tg:
            settings = make_settings()
            assert settings.scheduler.enabled
            http = HttpServer(HttpSettings(port=0))
            terminal = TerminalChannel(settings.terminal.chat, read_stdin=True)
            webhook = WebhookChannel(WebhookSettings(enabled=True, secret=SECRET), http, settle=0.1)
            telegram = TelegramChannel(settings_for(tg), poll_timeout=1, backoff=Backoff(0.05, 0.2))
            auth = WebAuth.from_home(settings.home_dir)
            webchat = WebChatChannel(WebChatSettings(), http, auth)
            app = App(settings, [terminal, webhook, telegram, webchat], http, web_auth=auth)
            bearer = {"Authorization": f"Bearer {(settings.home_dir / TOKEN_FILE).read_text()}"}
            browser = aiohttp.ClientSession(headers={k: v.strip() for k, v in bearer.items()})
            async with app:
                services = app.services
                assert services is not None and services.scheduler is not None
                supervisor = services.supervisor
                tg.push_message("/status", chat_id=OWNER, from_id=OWNER)
                await tg.wait_for_text("Fetch ·")
                os.write(typed, b"/whoami\n")
                await asyncio.wait_for(terminal.outbox.get(), 15)
                status, body = await Client(http.url).post(
                    "/webhook", {"text": "/whoami", "wait": 5}
                )
                assert status == 202 and body["replies"]
                # A page's event stream, left open: stopping must end it (not wait on it).
                stream = await browser.get(http.url + "/chat/events")
                page = asyncio.create_task(stream.content.read(), name="test:page")
                async with browser.post(http.url + "/chat/send", json={"text": "/whoami"}) as r:
                    assert r.status == 202
                for _ in range(300):  # the reply reaches the page's stream before the stop
                    if any(e.kind == "message" for e in webchat.outbox.since("owner", 0).events):
                        break
                    await asyncio.sleep(0.05)
                # Left on: stopping must end it.
                await services.messenger.typing(SessionKey("telegram", str(OWNER)), True)
                names = {t.get_name() for t in supervisor.running()}
                assert {
                    "channel:terminal:stdin",
                    "channel:telegram:polling",
                    f"channel:telegram:typing:{OWNER}",
                    "scheduler:tick",
                } <= names
                assert services.scheduler.running
            assert supervisor.running() == []
            assert b"event: message" in await asyncio.wait_for(page, 5)  # ended by the stop
            stream.release()
            await browser.close()
            left = [t for t in asyncio.all_tasks() - before if not t.done()]
            fetchs = [
                t.get_name()
                for t in left
                if t.get_name().startswith(
                    (
                        "channel:",
                        "scheduler:",
                        "job:",
                        "ntfy:",
                        "session:",
                        "run:",
                        "memory:",
                        "alert",
                    )
                )
            ]
            assert fetchs == []
        # The fake Bot API is gone too: now no task at all remains that was not there.
        left = [t for t in asyncio.all_tasks() - before if not t.done()]
        assert left == [], [(t.get_name(), t.get_coro()) for t in left]
