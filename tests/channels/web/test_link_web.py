"""/link between the web chat and the owner's Telegram chat, through the real app: the
HTTP listener with a logged-in client reading the SSE, and the fake Bot API. A code shown
in the web chat and typed on the phone pairs them; a task asked for in the browser shows
its diff there (with its buttons), and the owner's "yes" on the phone commits it."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Callable

import pytest

from orchestrator.config import Settings
from tests.channels.web.test_webchat import is_diff, start, stop
from tests.conftest import git
from tests.fakes.telegram_api import FakeTelegramApi

OWNER = 42


@pytest.fixture
async def tg() -> AsyncIterator[FakeTelegramApi]:
    async with FakeTelegramApi() as fake:
        yield fake


async def test_the_web_chat_and_the_phone_are_one_conversation(
    tg: FakeTelegramApi, make_settings: Callable[..., Settings]
) -> None:
    settings = make_settings(
        FETCH__HTTP__PORT="0",
        FETCH__TELEGRAM__ENABLED="true",
        FETCH__TELEGRAM__TOKEN=tg.token,
        FETCH__TELEGRAM__OWNER_ID=str(OWNER),
        FETCH__TELEGRAM__API_BASE=tg.url,
    )
    web = await start(settings)
    try:
        base = git(web.repo, "rev-parse", "HEAD")
        async with web.chat.stream() as stream:
            await web.chat.send("/link")
            offer = await stream.until(lambda e: "Link code" in e.text)
            code = re.search(r"Link code: (\d{6})", offer.text)
            assert code is not None
            tg.push_message(f"/link {code[1]}", chat_id=OWNER, from_id=OWNER)
            linked = await tg.wait_for_text("Linked", timeout=30)
            assert "the web chat and Telegram" in " ".join(linked.text.split())
            # Asked in the browser: the diff comes to the browser, buttons and all.
            await web.chat.send("fix the typo in README.md of demo")
            diff = await stream.until(is_diff)
            assert "+The quick" in diff.text
            assert not [m for m in tg.sent(OWNER) if "Apply?" in m.text]
            # ... and the owner's yes on the phone answers that same diff.
            tg.push_message("yes", chat_id=OWNER, from_id=OWNER)
            done = await tg.wait_for_text("Committed", timeout=60)
        assert git(web.repo, "rev-parse", "HEAD^") == base
        assert git(web.repo, "rev-parse", "HEAD")[:7] in done.text
    finally:
        await stop(web)
