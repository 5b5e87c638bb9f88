"""Long polling against the fake Bot API: updates become Inbound, once each."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from channels.telegram.channel import Backoff, TelegramChannel
from core.gate import AllowlistGate
from orchestrator.supervisor import TaskSupervisor
from tests.channels.telegram.support import OWNER, RecordingSink, settings_for
from tests.fakes.telegram_api import FakeTelegramApi


async def test_updates_arrive_as_inbound_and_offset_advances(
    tg: FakeTelegramApi,
    sink: RecordingSink,
    make_channel: Callable[..., Any],
) -> None:
    await make_channel()
    first = tg.push_message("hello", chat_id=OWNER, from_id=OWNER)
    got = await sink.next()
    assert (got.channel, got.chat, got.sender, got.text) == ("telegram", "42", "42", "hello")
    assert got.from_owner and not got.is_group
    assert got.message_id == f"42:{first['message']['message_id']}"
    second = tg.push_message("again", chat_id=OWNER, from_id=OWNER)
    assert (await sink.next()).text == "again"
    # The poll after a batch confirms it: offset = that update's id + 1.
    await tg.wait_for(
        "getUpdates", where=lambda c: c.params.get("offset") == second["update_id"] + 1
    )
    offsets = [c.params["offset"] for c in tg.calls_to("getUpdates")]
    assert offsets[0] == 0 and offsets == sorted(offsets)
    assert tg.calls_to("deleteWebhook"), "polling clears a stale webhook first"


async def test_duplicate_update_id_is_delivered_once(
    tg: FakeTelegramApi,
    sink: RecordingSink,
    make_channel: Callable[..., Any],
) -> None:
    update = tg.push_message("once", chat_id=OWNER, from_id=OWNER)
    tg.push_update(update)  # the same update twice in one batch
    await make_channel()
    assert (await sink.next()).text == "once"
    tg.replay(update)  # and again later, ignoring the offset
    tg.push_message("next", chat_id=OWNER, from_id=OWNER)
    assert (await sink.next()).text == "next"
    await sink.nothing()
    assert [i.text for i in sink.got] == ["once", "next"]


async def test_strangers_groups_and_replies_are_marked(
    tg: FakeTelegramApi,
    sink: RecordingSink,
    make_channel: Callable[..., Any],
) -> None:
    await make_channel(gate=AllowlistGate(["telegram:7"]))
    tg.push_message("hi", chat_id=7, from_id=7)
    tg.push_message(
        "@fetch status", chat_id=-1001, from_id=OWNER, chat_type="supergroup", reply_to=5
    )
    # One batch, most likely: the owner's update is handed over first.
    by_sender = {i.sender: i for i in (await sink.next(), await sink.next())}
    stranger, group = by_sender["7"], by_sender[str(OWNER)]
    assert (stranger.sender, stranger.from_owner) == ("7", False)
    assert group.is_group and group.from_owner and group.chat == "-1001"
    assert group.reply_to == "-1001:5"


async def test_api_errors_back_off_and_recover(
    tg: FakeTelegramApi,
    sink: RecordingSink,
    make_channel: Callable[..., Any],
) -> None:
    tg.fail_next("getUpdates", code=502)
    tg.fail_next("getUpdates", code=502)
    tg.push_message("still here", chat_id=OWNER, from_id=OWNER)
    channel = await make_channel()
    assert (await sink.next()).text == "still here"
    failed = [c for c in tg.calls_to("getUpdates") if c.status == 502]
    assert len(failed) == 2
    assert "polling" in channel.health()


async def test_unreachable_api_never_crashes_and_stops_cleanly(
    tg: FakeTelegramApi,
    sink: RecordingSink,
) -> None:
    settings = settings_for(tg, api_base="http://127.0.0.1:9")  # nothing listens there
    channel = TelegramChannel(settings, poll_timeout=1, backoff=Backoff(0.02, 0.05))
    await channel.start(sink, TaskSupervisor())
    try:
        for _ in range(100):
            if "not ready" in channel.health():
                break
            await _tick()
        assert "not ready" in channel.health() and "request failed" in channel.health()
        assert tg.token not in channel.health()
    finally:
        await channel.stop()
    assert channel.health() == "telegram: stopped"


async def test_stop_confirms_what_was_handed_over(
    tg: FakeTelegramApi,
    sink: RecordingSink,
    make_channel: Callable[..., Any],
) -> None:
    channel = await make_channel()
    update = tg.push_message("hello", chat_id=OWNER, from_id=OWNER)
    await sink.next()
    await channel.stop()
    last = tg.calls_to("getUpdates")[-1]
    assert last.params["offset"] == update["update_id"] + 1
    assert last.params["timeout"] == 0


async def test_a_failing_sink_does_not_stop_the_poller(
    tg: FakeTelegramApi,
    make_channel: Callable[..., Any],
) -> None:
    got: list[str] = []

    async def flaky(inbound: Any) -> None:
        got.append(inbound.text)
        if inbound.text == "boom":
            raise RuntimeError("gateway exploded")

    channel = await make_channel(start=False)
    await channel.start(flaky, TaskSupervisor())
    try:
        tg.push_message("boom", chat_id=OWNER, from_id=OWNER)
        tg.push_message("after", chat_id=OWNER, from_id=OWNER)
        for _ in range(200):
            if got == ["boom", "after"]:
                break
            await _tick()
        assert got == ["boom", "after"]
    finally:
        await channel.stop()


async def _tick() -> None:
    await asyncio.sleep(0.02)
