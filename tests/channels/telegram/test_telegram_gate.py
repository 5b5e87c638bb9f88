"""The Telegram adapter asks the gate before it does anything for a sender (issue 11.4),
and hands the owner's updates of a batch over first without ever skipping one (11.3)."""

from __future__ import annotations

import asyncio
import logging
import sqlite3
from collections.abc import Callable
from typing import Any

import pytest

from channels.telegram import TelegramChannel
from channels.telegram.channel import Backoff
from core.events import Inbound
from core.gate import AllowlistGate
from orchestrator.app import build_app
from orchestrator.config import Settings
from orchestrator.supervisor import TaskSupervisor
from tests.channels.telegram.support import OWNER, RecordingSink, settings_for
from tests.fakes.telegram_api import FakeTelegramApi

STRANGER = 666
MEMBER = 777001


async def test_a_stranger_gets_no_toast_no_typing_and_nothing_is_stored(
    tg: FakeTelegramApi,
    make_settings: Callable[..., Settings],
    caplog: pytest.LogCaptureFixture,
) -> None:
    settings = make_settings()
    channel = TelegramChannel(
        settings_for(tg),
        poll_timeout=1,
        backoff=Backoff(0.05, 0.2),
        gate=AllowlistGate(settings.allowlist),
    )
    caplog.set_level(logging.INFO, logger="channels.telegram.channel")
    async with build_app(settings, channels=[channel]):
        for n in range(40):
            tg.push_message(
                f"fix the typo in README.md of demo {n}", chat_id=STRANGER, from_id=STRANGER
            )
            tg.push_callback(
                "fetch:yes:9f86d081884c7d65", chat_id=STRANGER, message_id=1, from_id=STRANGER
            )
        tg.push_callback("not-ours", chat_id=STRANGER, message_id=1, from_id=STRANGER)
        last = tg.push_message("/whoami", chat_id=OWNER, from_id=OWNER)
        await tg.wait_for(
            "getUpdates", where=lambda c: c.params.get("offset") == last["update_id"] + 1
        )
        await tg.wait_for("sendMessage")
        await asyncio.sleep(0.3)
        assert {m.chat_id for m in tg.sent()} == {str(OWNER)}
        assert tg.calls_to("answerCallbackQuery") == []
        assert all(c.params["chat_id"] == OWNER for c in tg.calls_to("sendChatAction"))
    with sqlite3.connect(settings.db_path) as db:
        rows = db.execute("SELECT message_id FROM inbound").fetchall()
        logged = db.execute("SELECT text FROM messages").fetchall()
    assert [r[0].split(":")[0] for r in rows] == [str(OWNER)]
    assert not any("README" in t for (t,) in logged)
    dropped = [r for r in caplog.records if "non-allowed sender" in r.getMessage()]
    assert 1 <= len(dropped) <= 10, "81 strangers' updates, a few lines (rate-limited)"


async def test_the_owners_updates_in_a_batch_are_handed_over_first(
    tg: FakeTelegramApi,
    sink: RecordingSink,
    make_channel: Callable[..., Any],
) -> None:
    # All in one getUpdates batch: queued before the channel polls.
    for n in range(30):
        tg.push_message(f"flood {n}", chat_id=MEMBER, from_id=MEMBER)
    tg.push_message("/stop", chat_id=OWNER, from_id=OWNER)
    last = tg.push_message("flood last", chat_id=MEMBER, from_id=MEMBER)
    await make_channel(gate=AllowlistGate([f"telegram:{MEMBER}"]))
    assert (await sink.next()).text == "/stop"
    await tg.wait_for("getUpdates", where=lambda c: c.params.get("offset") == last["update_id"] + 1)
    assert [i.text for i in sink.got[1:]] == [*(f"flood {n}" for n in range(30)), "flood last"]


class DedupingSink:
    """The gateway's place across a restart: what it accepted persists (as the SQLite
    dedupe does); a hand-over of the member's second message never completes."""

    def __init__(self) -> None:
        self.accepted: list[str] = []
        self.redelivered: list[str] = []
        self.block = True
        self.blocked = asyncio.Event()

    async def __call__(self, inbound: Inbound) -> None:
        if inbound.message_id in self.accepted:
            self.redelivered.append(inbound.message_id)
            return
        if self.block and inbound.text == "m2":
            self.blocked.set()
            await asyncio.Event().wait()  # until the channel is stopped
        self.accepted.append(inbound.message_id)


async def test_a_stop_mid_batch_skips_nothing_and_repeats_nothing(
    tg: FakeTelegramApi,
) -> None:
    ids = {}
    for text, who in (("m1", MEMBER), ("m2", MEMBER), ("owner", OWNER), ("m3", MEMBER)):
        update = tg.push_message(text, chat_id=who, from_id=who)
        ids[text] = (update["update_id"], f"{who}:{update['message']['message_id']}")
    sink = DedupingSink()
    gate = AllowlistGate([f"telegram:{MEMBER}"])

    def channel() -> TelegramChannel:
        return TelegramChannel(
            settings_for(tg), poll_timeout=1, backoff=Backoff(0.05, 0.2), gate=gate
        )

    first = channel()
    await first.start(sink, TaskSupervisor())
    await asyncio.wait_for(sink.blocked.wait(), 5)
    await first.stop()  # while m2 is being handed over
    assert sink.accepted == [ids["owner"][1], ids["m1"][1]]
    # Confirmed up to m2, not past it: the owner's (handed over) and m3 (not) stay.
    assert tg.calls_to("getUpdates")[-1].params["offset"] == ids["m2"][0]

    sink.block = False
    second = channel()
    await second.start(sink, TaskSupervisor())
    try:
        await tg.wait_for("getUpdates", where=lambda c: c.params.get("offset") == ids["m3"][0] + 1)
    finally:
        await second.stop()
    assert sorted(sink.accepted) == sorted(mid for _, mid in ids.values())
    assert len(sink.accepted) == len(set(sink.accepted)) == 4
    # Telegram hands the owner's update over again; its id is the same, so the gateway's
    # persistent dedupe (here: the sink) drops it.
    assert sink.redelivered == [ids["owner"][1]]
