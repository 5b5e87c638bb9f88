"""Issue 11.3, the owner first: a member's flood never holds up the owner. Through the real
WhatsApp adapter (real neonize events on a foreign thread) and the whole app.

Ordering, not timing (the timing figures are ``python -m bench.flood``): in a group the
owner's message is answered before the member's backlog drains, and over the limit a
member is refused at once (told once) instead of holding up the adapter's event pump.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from orchestrator.app import App
from orchestrator.config import Settings
from tests.channels.whatsapp.builders import FRIEND, GROUP, OWNER, in_group, text_from
from tests.channels.whatsapp.fake_client import FakeWhatsAppClient
from tests.channels.whatsapp.whole_app import start_app

FLOOD = 30
SEND_SECONDS = 0.03  # WhatsApp sends are slow (paced seconds apart in a real Fetch)


class SlowSendClient(FakeWhatsAppClient):
    """Each send takes a while, so handling is slower than arriving and a backlog forms,
    as it does when a member floods a real Fetch."""

    async def send_message(self, to: Any, message: Any) -> str:
        await asyncio.sleep(SEND_SECONDS)
        return await super().send_message(to, message)


@pytest.fixture
async def flooded(
    make_settings: Callable[..., Settings],
) -> AsyncIterator[Callable[[str], asyncio.Future[tuple[App, FakeWhatsAppClient]]]]:
    made: list[App] = []

    async def make(rate: str) -> tuple[App, FakeWhatsAppClient]:
        settings = make_settings(
            FETCH__WHATSAPP__ENABLED="true",
            FETCH_WHATSAPP_OWNER=f"+{OWNER}",  # a fictional number: written with its +
            FETCH__WHATSAPP__MIN_SEND_INTERVAL_SECONDS="0",
            FETCH__WHATSAPP__SENDS_PER_MINUTE="100000",
            FETCH__ALLOWLIST=f'["whatsapp:{FRIEND}"]',
            FETCH__GATEWAY__RATE_PER_MINUTE=rate,
        )
        client = SlowSendClient()
        app = await start_app(settings, client)
        made.append(app)
        return app, client

    yield make  # type: ignore[misc]
    for app in made:
        await app.__aexit__(None, None, None)


HELP = "I'm Fetch"  # the /help reply
WORKSPACE = "📂"  # the /workspace reply


def replies(client: FakeWhatsAppClient, chat: str) -> list[str]:
    return [c.text for c in client.named("send") if c.chat == chat]


async def until(predicate: Callable[[], bool], within: float = 30.0) -> None:
    async with asyncio.timeout(within):
        while not predicate():  # noqa: ASYNC110 - polling what the fake client recorded
            await asyncio.sleep(0.01)


async def test_in_a_group_the_owner_is_answered_before_a_members_backlog_drains(
    flooded: Callable[[str], asyncio.Future[tuple[App, FakeWhatsAppClient]]],
) -> None:
    _app, client = await flooded("100000")  # no limit in the way: every message queues
    group = f"{GROUP}@g.us"
    for i in range(FLOOD):
        client.emit(in_group(FRIEND, "@fetch /help", id=f"3EBFLOOD{i:04d}"))
    client.emit(in_group(OWNER, "@fetch /workspace", id="3EBOWNER1"))
    await until(lambda: len(replies(client, group)) == FLOOD + 1)
    said = replies(client, group)
    owner_at = next(i for i, text in enumerate(said) if text.startswith(WORKSPACE))
    # Per-sender queues and a first-come lock per session: the owner waits for the
    # message being handled (and at most one more already waiting), never for the
    # member's whole backlog (before: all of it, FLOOD replies first).
    assert owner_at <= 3, said
    assert sum(HELP in text for text in said) == FLOOD


async def test_over_the_limit_a_member_is_refused_at_once_and_told_once(
    flooded: Callable[[str], asyncio.Future[tuple[App, FakeWhatsAppClient]]],
) -> None:
    app, client = await flooded("5")
    assert app.services is not None
    friend_chat = f"{FRIEND}@s.whatsapp.net"
    for i in range(FLOOD):
        client.emit(text_from(FRIEND, "/help", id=f"3EBLIM{i:04d}"))
    # The owner's /status right behind the flood: answered although the member is far
    # over the limit (an aiolimiter wait here held the adapter's pump for minutes).
    client.emit(text_from(OWNER, "/status", id="3EBOWNERST"))
    owner_chat = f"{OWNER}@s.whatsapp.net"
    await until(lambda: any("Fetch ·" in t for t in replies(client, owner_chat)), within=10)
    await until(lambda: sum(HELP in t for t in replies(client, friend_chat)) >= 5)
    await asyncio.sleep(0.3)
    to_friend = replies(client, friend_chat)
    assert sum("faster than" in t for t in to_friend) == 1  # once a window, not per message
    assert sum(HELP in t for t in to_friend) == 5  # the burst the limit allows, no more
    # Refused messages were never accepted: no row, so nothing replays after a restart.
    rows = await app.services.store.db.conn.execute_fetchall(
        "SELECT COUNT(*) FROM inbound WHERE message_id LIKE '3EBLIM%'"
    )
    assert next(iter(rows))[0] == 5
