"""Start-up never depends on a channel being up, and the web chat's outbox is durable
(issue 22): what a crash left (a task cut short in a web chat) is told in a notice that
waits in SQLite until the chat's channel has started, and what Fetch said to the web
chat while no page was open is still there for the page after a restart. The real app,
the real HTTP listener, a real client reading the event stream."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable

from channels.http import HttpServer
from channels.http_settings import HttpSettings
from channels.webhook import WebhookChannel
from channels.webhook_settings import WebhookSettings
from core.events import SessionKey
from orchestrator.app import build_app
from orchestrator.config import Settings
from tests.channels.web.test_webchat import start, stop
from tests.channels.webhook.support import SECRET, Client


def _crash_left_a_task(settings: Settings, key: SessionKey) -> None:
    """What a kill in the middle of a task started from the web chat leaves: the chat
    WORKING on a task that no process runs any more."""
    db = sqlite3.connect(settings.db_path)
    try:
        db.execute(
            "INSERT INTO tasks(session, repo, prompt, harness, status, created)"
            " VALUES (?, 'demo', 'fix the typo', 'demo', 'running', 0)",
            (f"{key.channel}:{key.chat}",),
        )
        task_id = db.execute("SELECT max(id) FROM tasks").fetchone()[0]
        data = json.dumps({"repo": "demo", "task_id": task_id})
        db.execute(
            "INSERT OR REPLACE INTO sessions(key, channel, chat, state, data, updated)"
            " VALUES (?,?,?, 'WORKING', ?, 0)",
            (f"{key.channel}:{key.chat}", key.channel, key.chat, data),
        )
        db.commit()
    finally:
        db.close()


async def test_a_crash_during_a_web_task_does_not_stop_the_next_start(
    make_settings: Callable[..., Settings],
) -> None:
    settings = make_settings(FETCH__HTTP__PORT="0")
    first = await start(settings)
    key = SessionKey("web", first.channel.chat)
    await stop(first)
    _crash_left_a_task(settings, key)
    second = await start(settings)  # failed: "cannot start: web chat is not started"
    try:
        async with second.chat.stream(after=0) as stream:
            told = await stream.until(lambda e: "Fetch restarted while task" in e.text)
        assert "unchanged" in told.text
    finally:
        await stop(second)


async def test_what_came_while_no_page_was_open_survives_a_restart(
    make_settings: Callable[..., Settings],
) -> None:
    settings = make_settings(FETCH__HTTP__PORT="0")
    first = await start(settings)
    try:
        assert first.app.services is not None
        key = SessionKey("web", first.channel.chat)
        # A reminder fires while no page is open (the scheduler sends it like this).
        await first.app.services.messenger.send(key, "⏰ Reminder: call the bank")
    finally:
        await stop(first)
    second = await start(settings)
    try:
        async with second.chat.stream(after=0) as stream:
            got = await stream.until(lambda e: "call the bank" in e.text)
        assert got.kind == "message"
        # The page itself (no script) shows it too.
        async with second.chat.session.get(second.base + "/chat") as page:
            assert "call the bank" in await page.text()
    finally:
        await stop(second)


async def test_a_crash_during_a_webhook_task_is_told_once_the_webhook_is_up(
    make_settings: Callable[..., Settings],
) -> None:
    settings = make_settings()
    key = SessionKey("webhook", "ci")
    async with build_app(settings, channels=[]):
        pass  # the home and its database, as a first run leaves them
    _crash_left_a_task(settings, key)
    http = HttpServer(HttpSettings(port=0))
    channel = WebhookChannel(WebhookSettings(enabled=True, secret=SECRET), http, settle=0.2)
    async with build_app(settings, channels=[channel]), http:
        status, body = await Client(http.url).post("/webhook/replies", {"chat": "ci", "wait": 5})
    assert status == 200, body
    assert any("Fetch restarted while task" in r["text"] for r in body["replies"]), body
    db = sqlite3.connect(settings.db_path)
    try:
        waiting = db.execute("SELECT count(*) FROM outbox WHERE sent IS NULL").fetchone()[0]
    finally:
        db.close()
    assert waiting == 0  # delivered, so not told again at the next start
