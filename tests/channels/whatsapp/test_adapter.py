"""The WhatsApp channel driven through its real event path: neonize-shaped protobufs
arrive on a foreign thread (``FakeWhatsAppClient.emit``), the adapter hands them to its
loop, and whatever reaches the gateway sink or the wire is recorded."""

from __future__ import annotations

import asyncio
import itertools
import logging
import os
import threading
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from channels.whatsapp import RecipientNotAllowed, WhatsAppChannel
from channels.whatsapp import _neonize as nz
from channels.whatsapp.format import to_whatsapp
from core.errors import SendFailed
from core.events import Outbound, SessionKey
from orchestrator.supervisor import TaskSupervisor
from tests.channels.outbound import messenger_for

from .builders import (
    FRIEND,
    OWNER,
    image,
    in_group,
    jid,
    message_event,
    quoting,
    reaction,
    self_chat,
    text_from,
)
from .fake_client import FakeWhatsAppClient
from .harness import FRIEND_CHAT, OWNER_CHAT, Harness, settings, started


@pytest.fixture
async def wa(tmp_path: Path) -> AsyncIterator[Harness]:
    harness = await started(tmp_path)
    yield harness
    await harness.channel.stop()


# -- inbound -------------------------------------------------------------------------


async def test_events_from_a_foreign_thread_reach_the_gateway_on_the_loop(wa: Harness) -> None:
    wa.client.emit(text_from(OWNER, "fix the login test", id="3EB0IN01"))
    inbound = await wa.next()
    assert wa.client.threads == {"fake-neonize-go"}
    assert wa.sink_threads == {threading.main_thread().name}
    assert inbound.channel == "whatsapp" and inbound.chat == OWNER_CHAT
    assert inbound.sender == OWNER and inbound.from_owner and not inbound.is_group
    assert inbound.message_id == "3EB0IN01" and inbound.text == "fix the login test"
    assert "connected" in wa.channel.health() and "last in 0s ago" in wa.channel.health()


async def test_group_chatter_never_reaches_the_gateway(
    wa: Harness, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, "channels.whatsapp")
    wa.client.emit(in_group(FRIEND, "lunch at 1?", id="3EB0G01"))
    wa.client.emit(in_group(OWNER, "@fetch /status", id="3EB0G02"))
    got = await wa.drain()
    assert [i.message_id for i in got] == ["3EB0G02"]
    assert got[0].is_group and got[0].chat.endswith("@g.us")
    assert "3EB0G01 not for Fetch: group message without @fetch" in caplog.text


@pytest.mark.parametrize(
    ("required", "text", "delivered"),
    [(False, "/status", True), (True, "/status", False), (True, "@fetch /status", True)],
)
async def test_self_chat_trigger_is_configurable(
    tmp_path: Path, required: bool, text: str, delivered: bool
) -> None:
    wa = await started(tmp_path, ws=settings(trigger_in_self_chat=required))
    try:
        wa.client.emit(self_chat(text, id="3EB0SELF"))
        got = await wa.drain()
        assert [i.message_id for i in got] == (["3EB0SELF"] if delivered else [])
    finally:
        await wa.channel.stop()


@pytest.mark.parametrize(
    ("required", "text", "delivered"),
    [(False, "hello", True), (True, "hello", False), (True, "@Fetch, hello", True)],
)
async def test_direct_chat_trigger_is_configurable(
    tmp_path: Path, required: bool, text: str, delivered: bool
) -> None:
    wa = await started(tmp_path, ws=settings(trigger_in_direct_chat=required))
    try:
        wa.client.emit(text_from(OWNER, text, id="3EB0DM"))
        got = await wa.drain()
        assert [i.message_id for i in got] == (["3EB0DM"] if delivered else [])
    finally:
        await wa.channel.stop()


async def test_read_receipts_for_the_owner_and_allowlist_only(tmp_path: Path) -> None:
    wa = await started(tmp_path, allowlist=["whatsapp:33612345678", "telegram:44700900123"])
    try:
        wa.client.emit(text_from(OWNER, "hi", id="3EB0OWN"))
        wa.client.emit(text_from(FRIEND, "who is this?", id="3EB0STR"))
        wa.client.emit(text_from("33612345678", "hello", id="3EB0ALW"))
        await wa.drain()
        read = {c.message_id for c in wa.client.named("read")}
        assert "3EB0OWN" in read and "3EB0ALW" in read and "3EB0STR" not in read
    finally:
        await wa.channel.stop()


async def test_an_image_is_downloaded_into_the_session_media_folder(wa: Harness) -> None:
    wa.client.emit(
        message_event(
            image("@fetch what is this?"),
            id="3EB0IMG",
            chat=jid(OWNER),
            sender=jid(OWNER),
            kind="media",
        )
    )
    inbound = await wa.next()
    (attachment,) = inbound.attachments
    path = Path(attachment.path)
    assert path == wa.home / "sessions" / f"whatsapp_{OWNER_CHAT}" / "media" / "3EB0IMG.jpg"
    assert await asyncio.to_thread(path.read_bytes) == b"\x89PNG fake image"
    assert attachment.kind == "image" and attachment.mime == "image/jpeg"
    assert os.stat(path).st_mode & 0o777 == 0o600
    assert inbound.text == "@fetch what is this?"


async def test_a_failed_or_oversized_download_is_said_in_the_text(tmp_path: Path) -> None:
    client = FakeWhatsAppClient(media=RuntimeError("media conn reset"))
    wa = await started(tmp_path, client)
    try:
        wa.client.emit(
            message_event(image(), id="3EB0IMG1", chat=jid(OWNER), sender=jid(OWNER), kind="media")
        )
        first = await wa.next()
        assert first.text == "[image not received: the download failed]"
        assert first.attachments == ()
        client.media = b"x" * (2 * 1024 * 1024)  # the event declared 123 kB
        await wa.channel.stop()
        wa = await started(tmp_path, client, ws=settings(max_media_bytes=1024 * 1024))
        wa.client.emit(
            message_event(
                image("see"), id="3EB0IMG2", chat=jid(OWNER), sender=jid(OWNER), kind="media"
            )
        )
        second = await wa.next()
        assert second.text == "see\n[image not received: 2.0 MB is over the 1.0 MB limit]"
    finally:
        await wa.channel.stop()


# -- outbound ------------------------------------------------------------------------


async def test_never_messages_a_chat_that_did_not_write_first(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # FRIEND is allowlisted: a stranger's message is not kept, so it enables nothing
    # (test_gate_whatsapp.py); an allowed sender's first message opens the chat.
    wa = await started(tmp_path, allowlist=[f"whatsapp:{FRIEND}"])
    with pytest.raises(RecipientNotAllowed):
        await wa.channel.send(Outbound("whatsapp", FRIEND_CHAT, "hello stranger"))
    assert wa.client.named("send") == []
    assert f"refused to message {FRIEND_CHAT}" in caplog.text
    await wa.channel.set_typing(FRIEND_CHAT, True)
    assert wa.client.named("typing") == []
    wa.client.emit(text_from(FRIEND, "hi", id="3EB0HI"))
    await wa.next()
    await wa.channel.send(Outbound("whatsapp", FRIEND_CHAT, "hi, I only answer my owner"))
    assert [c.chat for c in wa.client.named("send")] == [FRIEND_CHAT]
    await wa.channel.stop()


async def test_the_owners_direct_chat_needs_no_earlier_message(tmp_path: Path) -> None:
    # The owner's configured number is theirs: a group's diff, a member's permission
    # question or a reminder reaches their DM though they never wrote to Fetch there.
    wa = await started(tmp_path)
    await wa.channel.send(Outbound("whatsapp", OWNER_CHAT, "a diff for you"))
    assert [(c.chat, c.text) for c in wa.client.named("send")] == [(OWNER_CHAT, "a diff for you")]
    # Only their direct chat: a look-alike in another server is still refused.
    with pytest.raises(RecipientNotAllowed):
        await wa.channel.send(Outbound("whatsapp", f"{OWNER_CHAT.split('@')[0]}@g.us", "x"))
    await wa.channel.stop()


async def test_who_wrote_first_survives_a_restart(tmp_path: Path) -> None:
    wa = await started(tmp_path)
    wa.client.emit(text_from(OWNER, "hi", id="3EB0R1"))
    await wa.next()
    await wa.channel.stop()
    again = await started(tmp_path)  # a new process: only the ledger file remains
    try:
        result = await again.channel.send(Outbound("whatsapp", OWNER_CHAT, "back online"))
        assert again.client.named("send")[0].message_id == result.message_id
    finally:
        await again.channel.stop()


async def test_replies_are_whatsapp_markup_in_chunks(wa: Harness) -> None:
    wa.client.emit(text_from(OWNER, "show me", id="3EB0Q"))
    await wa.next()
    body = "```diff\n" + "\n".join(f"+ line {i:04d} " + "x" * 40 for i in range(200)) + "\n```"
    async with messenger_for(wa.channel, wa.home) as messenger:  # the one place that cuts
        result = await messenger.send(
            SessionKey("whatsapp", OWNER_CHAT), f"**Diff** for *myapp*:\n\n{body}", reply_to="3EB0Q"
        )
    sends = wa.client.named("send")
    assert len(sends) == 4 and all(len(c.text) <= 3500 for c in sends)
    assert sends[0].text.startswith("*Diff* for _myapp_:\n\n```\n+ line 0000")
    assert all(c.text.count("```") == 2 for c in sends)  # each part renders as code
    assert sends[0].extra["quoted"] == "3EB0Q"  # the first part quotes the question
    assert sends[1].extra["quoted"] == ""
    assert result.message_id == sends[-1].message_id


async def test_edit_in_place_and_its_fallbacks(wa: Harness) -> None:
    wa.client.emit(text_from(OWNER, "go", id="3EB0GO"))
    await wa.next()
    first = await wa.channel.send(Outbound("whatsapp", OWNER_CHAT, "⏳ working…"))
    edited = await wa.channel.send(
        Outbound("whatsapp", OWNER_CHAT, "✅ done", edit_of=first.message_id)
    )
    assert edited.message_id == first.message_id  # later edits target the same message
    (edit,) = wa.client.named("edit")
    assert edit.message_id == first.message_id and edit.text == "✅ done"
    wa.client.fail_edits = True  # e.g. older than WhatsApp's edit window
    again = await wa.channel.send(
        Outbound("whatsapp", OWNER_CHAT, "✅ done (2)", edit_of=first.message_id)
    )
    assert again.message_id != first.message_id
    foreign = await wa.channel.send(Outbound("whatsapp", OWNER_CHAT, "new", edit_of="3EB0NOTOURS"))
    assert wa.client.named("send")[-1].message_id == foreign.message_id


async def test_echoes_of_our_own_messages_are_ignored(wa: Harness) -> None:
    wa.client.emit(self_chat("/status", id="3EB0ST"))
    await wa.next()
    sent = await wa.channel.send(Outbound("whatsapp", OWNER_CHAT, "all good"))
    # The same message, seen from the owner's phone in the self-chat.
    wa.client.emit(
        message_event(
            nz.Message(conversation="all good"),
            id=sent.message_id,
            chat=jid(OWNER),
            sender=jid(OWNER, device=7),
            from_me=True,
        )
    )
    assert await wa.drain() == []


async def test_a_thumbs_up_on_a_diff_is_an_answer(wa: Harness) -> None:
    wa.client.emit(text_from(OWNER, "fix it", id="3EB0FIX"))
    await wa.next()
    diff = await wa.channel.send(Outbound("whatsapp", OWNER_CHAT, "📝 diff… Apply? (yes/no)"))
    wa.client.emit(reaction(OWNER, "3EB0SOMETHINGELSE", "👍", id="3EB0RX1"))
    wa.client.emit(reaction(OWNER, diff.message_id, "👍", id="3EB0RX2"))
    wa.client.emit(
        message_event(
            quoting("no", diff.message_id), id="3EB0RX3", chat=jid(OWNER), sender=jid(OWNER)
        )
    )
    got = await wa.drain()
    assert [(i.message_id, i.reaction, i.reply_to) for i in got] == [
        ("3EB0RX2", "👍", diff.message_id),
        ("3EB0RX3", None, diff.message_id),
    ]


async def test_typing_indicator(wa: Harness) -> None:
    wa.client.emit(text_from(OWNER, "hi", id="3EB0T"))
    await wa.next()
    await wa.channel.set_typing(OWNER_CHAT, True)
    await wa.channel.set_typing(OWNER_CHAT, False)
    assert [c.extra["composing"] for c in wa.client.named("typing")] == [True, False]


async def test_sends_are_paced(tmp_path: Path) -> None:
    wa = await started(tmp_path, ws=settings(min_send_interval_seconds=0.15))
    try:
        wa.client.emit(text_from(OWNER, "hi", id="3EB0P"))
        await wa.next()
        for n in range(3):
            await wa.channel.send(Outbound("whatsapp", OWNER_CHAT, f"part {n}"))
        times = [c.at for c in wa.client.named("send")]
        assert all(b - a >= 0.14 for a, b in itertools.pairwise(times))
    finally:
        await wa.channel.stop()


async def test_a_failed_send_is_send_failed(tmp_path: Path) -> None:
    wa = await started(tmp_path, FakeWhatsAppClient(fail_sends=1))
    try:
        wa.client.emit(text_from(OWNER, "hi", id="3EB0F"))
        await wa.next()
        with pytest.raises(SendFailed, match="websocket not connected"):
            await wa.channel.send(Outbound("whatsapp", OWNER_CHAT, "hello"))
    finally:
        await wa.channel.stop()


# -- lifecycle -----------------------------------------------------------------------


async def test_start_twice_is_refused_and_stop_is_symmetric(wa: Harness) -> None:
    with pytest.raises(RuntimeError):
        await wa.channel.start(wa.sink, TaskSupervisor())
    await wa.channel.stop()
    assert [c.name for c in wa.client.calls] == ["connect", "disconnect"]
    assert wa.channel.health().startswith("whatsapp: stopped")
    wa.client.emit(text_from(OWNER, "late", id="3EB0LATE"))  # after stop: ignored
    await asyncio.sleep(0.05)
    assert wa.inbox.empty()


def test_capabilities_follow_the_settings(tmp_path: Path) -> None:
    channel = WhatsAppChannel(
        settings(min_send_interval_seconds=4, sends_per_minute=10),
        tmp_path,
        client=FakeWhatsAppClient(),
    )
    caps = channel.capabilities
    assert (
        caps.message_limit,
        caps.markup,
        caps.can_edit,
        caps.can_react,
        caps.typing,
        caps.reply_only,
    ) == (3500, "whatsapp", True, True, True, True)
    assert (caps.min_send_interval, caps.sends_per_minute) == (4, 10)
    assert (caps.render, caps.measure) == (to_whatsapp, len)  # the goldens' pipeline
    assert channel.name == "whatsapp"


async def test_stop_ends_every_task_the_channel_spawned(wa: Harness) -> None:
    tasks = wa.supervisor.running()
    assert {t.get_name() for t in tasks} == {"channel:whatsapp:events", "channel:whatsapp:monitor"}
    await wa.channel.stop()
    assert wa.supervisor.running() == [] and all(t.done() for t in tasks)
