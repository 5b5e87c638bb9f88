"""A reminder set and delivered over WhatsApp (real neonize events in, the recording send
path out), and the ntfy push against a real HTTP server on 127.0.0.1."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable

import pytest
from aiohttp import web

from orchestrator.app import App
from orchestrator.config import Settings
from tests.channels.whatsapp.builders import OWNER, text_from
from tests.channels.whatsapp.fake_client import FakeWhatsAppClient
from tests.channels.whatsapp.whole_app import OWNER_DIRECT, running, wait_for
from tests.conftest import Driver, start_driver


class NtfyServer:
    """A stand-in ntfy: records each POST (topic, title, body)."""

    def __init__(self) -> None:
        self.posts: list[tuple[str, str, str]] = []
        self.runner: web.AppRunner | None = None
        self.url = ""

    async def start(self) -> None:
        app = web.Application()

        async def publish(request: web.Request) -> web.Response:
            body = await request.text()
            self.posts.append((request.match_info["topic"], request.headers.get("Title", ""), body))
            return web.json_response({"id": "x", "event": "message"})

        app.router.add_post("/{topic}", publish)
        self.runner = web.AppRunner(app)
        await self.runner.setup()
        site = web.TCPSite(self.runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self.url = f"http://127.0.0.1:{port}/fetch-test"

    async def stop(self) -> None:
        if self.runner is not None:
            await self.runner.cleanup()


@pytest.fixture
async def ntfy() -> AsyncIterator[NtfyServer]:
    server = NtfyServer()
    await server.start()
    yield server
    await server.stop()


@pytest.fixture
async def whatsapp(
    make_settings: Callable[..., Settings],
    ntfy: NtfyServer,
) -> AsyncIterator[tuple[App, FakeWhatsAppClient]]:
    settings = make_settings(
        **OWNER_DIRECT, FETCH_NTFY_URL=ntfy.url, FETCH_TIMEZONE="Europe/Berlin"
    )
    async with running(settings) as pair:
        yield pair


async def test_reminder_over_whatsapp_with_a_push(
    whatsapp: tuple[App, FakeWhatsAppClient],
    ntfy: NtfyServer,
) -> None:
    _app, client = whatsapp
    client.emit(text_from(OWNER, "/remind drink some water in 2s", id="3EBREM1"))
    index, confirm = await wait_for(client, "Reminder #1")
    assert "drink some water" in confirm and ("CET" in confirm or "CEST" in confirm)
    due_index, _text = await wait_for(client, "⏰ drink some water", after=index + 1)
    assert client.calls[due_index].chat == client.calls[index].chat  # the owner's chat
    async with asyncio.timeout(5):
        while not ntfy.posts:  # noqa: ASYNC110 (the server records; a poll is simplest)
            await asyncio.sleep(0.02)
    assert ntfy.posts == [("fetch-test", "Fetch reminder", "drink some water")]
    # A replay of the same WhatsApp message after a reconnect schedules nothing new.
    client.emit(text_from(OWNER, "/remind drink some water in 2s", id="3EBREM1"))
    await asyncio.sleep(3)
    assert sum("⏰ drink some water" in t for t in client.sent_texts) == 1


async def test_ntfy_down_does_not_fail_the_reminder(
    make_settings: Callable[..., Settings],
) -> None:
    settings = make_settings(FETCH_NTFY_URL="http://127.0.0.1:9/nothing-listens")
    app, fetch = await start_driver(settings)
    try:
        driver: Driver = fetch
        await driver.ask("/remind x in 1s", "Reminder #")
        assert "⏰ x" in await driver.expect("⏰", timeout=10)
        assert "ntfy push on" in await driver.ask("/status", "scheduler:")
        scheduler = driver.services.scheduler
        assert scheduler is not None and scheduler.ntfy is not None
        assert scheduler.ntfy.failed == 1
    finally:
        await app.__aexit__(None, None, None)


async def test_a_scheduled_prompt_pushes_its_output(
    make_settings: Callable[..., Settings],
    ntfy: NtfyServer,
) -> None:
    app, driver = await start_driver(make_settings(FETCH_NTFY_URL=ntfy.url))
    try:
        await driver.ask("/schedule /whoami in 1s", "Job #")
        await driver.expect("🔁 Job #1", timeout=10)
        async with asyncio.timeout(10):
            while not ntfy.posts:  # noqa: ASYNC110
                await asyncio.sleep(0.02)
        topic, title, body = ntfy.posts[0]
        assert (topic, title) == ("fetch-test", "Fetch job #1") and body.strip()
    finally:
        await app.__aexit__(None, None, None)
