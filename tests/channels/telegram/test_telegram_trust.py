"""Issue 11 through the Telegram channel and the whole app, the phone being the fake Bot
API: a member's flood does not hold up the owner's /status (11.3), and a tap on the
buttons of a diff that was already answered approves nothing and starts nothing (11.7)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from channels.telegram import TelegramChannel
from channels.telegram.channel import Backoff
from core.gate import AllowlistGate
from orchestrator.app import build_app
from orchestrator.config import Settings
from tests.channels.telegram.support import OWNER, settings_for
from tests.conftest import git
from tests.fakes.telegram_api import FakeTelegramApi

MEMBER = 777001


async def test_a_members_flood_does_not_hold_up_the_owners_status(
    tg: FakeTelegramApi,
    make_settings: Callable[..., Settings],
) -> None:
    settings = make_settings(
        FETCH__ALLOWLIST=f'["telegram:{MEMBER}"]', FETCH__GATEWAY__RATE_PER_MINUTE="5"
    )
    channel = TelegramChannel(
        settings_for(tg),
        poll_timeout=1,
        backoff=Backoff(0.05, 0.2),
        gate=AllowlistGate(settings.allowlist),
    )
    async with build_app(settings, channels=[channel]):
        for _ in range(150):
            tg.push_message("/help", chat_id=MEMBER, from_id=MEMBER)
        tg.push_message("/status", chat_id=OWNER, from_id=OWNER)
        await tg.wait_for_text("Fetch ·", timeout=10)
        await asyncio.sleep(0.5)
        to_member = [m.text for m in tg.sent(MEMBER)]
        assert sum("I'm Fetch" in t for t in to_member) == 5  # the burst, no more
        assert sum("faster than" in t for t in to_member) == 1  # told once


async def test_a_tap_on_an_answered_diff_is_not_an_instruction(
    tg: FakeTelegramApi,
    make_settings: Callable[..., Settings],
) -> None:
    settings = make_settings()
    channel = TelegramChannel(settings_for(tg), poll_timeout=1, backoff=Backoff(0.05, 0.2))
    async with build_app(settings, channels=[channel]) as app:
        assert app.services is not None
        repo = app.services.workspace.path("demo")
        tg.push_message("fix the typo in README.md of demo", chat_id=OWNER, from_id=OWNER)
        diff = await tg.wait_for_text("Apply? (yes/no)", timeout=60)
        assert diff.reply_markup is not None
        yes = diff.reply_markup["inline_keyboard"][0][0]["callback_data"]
        tg.push_message("yes", chat_id=OWNER, from_id=OWNER)
        await tg.wait_for_text("Committed", timeout=60)
        head = git(repo, "rev-parse", "HEAD")
        said = len(tg.sent(OWNER))
        # The old buttons, tapped again (a stale client still shows them).
        tg.push_callback(yes, chat_id=OWNER, message_id=diff.message_id)
        await tg.wait_for("answerCallbackQuery")
        await asyncio.sleep(0.8)
        assert [m.text for m in tg.sent(OWNER)][said:] == []
        assert git(repo, "rev-parse", "HEAD") == head
