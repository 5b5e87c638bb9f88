"""The whole app behind the Telegram channel: the real gateway, SQLite, git and the demo
harness; the phone is the fake Bot API. A diff gets buttons; tapping 👍 commits it."""

from __future__ import annotations

from collections.abc import Callable

from channels.telegram import TelegramChannel
from channels.telegram.channel import Backoff
from orchestrator.app import build_app
from orchestrator.config import Settings
from tests.channels.telegram.support import OWNER, settings_for
from tests.conftest import git
from tests.fakes.telegram_api import FakeTelegramApi


async def test_fix_then_tap_apply_commits(
    tg: FakeTelegramApi,
    make_settings: Callable[..., Settings],
) -> None:
    settings = make_settings()
    channel = TelegramChannel(settings_for(tg), poll_timeout=1, backoff=Backoff(0.05, 0.2))
    async with build_app(settings, channels=[channel]) as app:
        assert app.services is not None
        repo = app.services.workspace.path("demo")
        base = git(repo, "rev-parse", "HEAD")
        tg.push_message("fix the typo in README.md of demo", chat_id=OWNER, from_id=OWNER)
        diff = await tg.wait_for_text("Apply? (yes/no)", timeout=60)
        assert diff.reply_markup is not None and "+The quick" in diff.text
        assert "<pre>" in diff.raw
        yes = diff.reply_markup["inline_keyboard"][0][0]["callback_data"]
        assert yes.startswith("fetch:yes:")  # bound to this approval's nonce
        tg.push_callback("fetch:yes:0000000000000000", chat_id=OWNER, message_id=diff.message_id)
        refused = await tg.wait_for_text("Refused", timeout=30)
        assert "another diff" in refused.text and git(repo, "rev-parse", "HEAD") == base
        tg.push_callback(yes, chat_id=OWNER, message_id=diff.message_id)
        done = await tg.wait_for_text("Committed", timeout=60)
        assert git(repo, "rev-parse", "HEAD^") == base
        assert git(repo, "rev-parse", "HEAD")[:7] in done.text
        assert diff.reply_markup is None


async def test_strangers_get_nothing_and_replays_are_dropped(
    tg: FakeTelegramApi,
    make_settings: Callable[..., Settings],
) -> None:
    settings = make_settings()

    def channel() -> TelegramChannel:
        return TelegramChannel(settings_for(tg), poll_timeout=1, backoff=Backoff(0.05, 0.2))

    async with build_app(settings, channels=[channel()]):
        tg.push_message("/help", chat_id=777, from_id=777)
        update = tg.push_message("/whoami", chat_id=OWNER, from_id=OWNER)
        await tg.wait_for("sendMessage")
        tg.replay(update)  # the channel's own window drops this one
        tg.push_message("/status", chat_id=OWNER, from_id=OWNER)
        await tg.wait_for_text("Fetch ·")
    assert len(tg.calls_to("sendMessage")) == 2
    # After a restart the window is empty: the gateway's SQLite dedupe drops the replay.
    async with build_app(settings, channels=[channel()]):
        tg.replay(update)
        tg.push_message("/status", chat_id=OWNER, from_id=OWNER)
        await tg.wait_for("sendMessage", count=3)
        await tg.wait_for(
            "getUpdates", where=lambda c: c.params.get("offset") == update["update_id"] + 3
        )
    assert len(tg.calls_to("sendMessage")) == 3
    assert {m.chat_id for m in tg.sent()} == {str(OWNER)}
