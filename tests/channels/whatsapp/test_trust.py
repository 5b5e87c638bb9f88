"""Issue 11 through the real WhatsApp adapter (real neonize protobufs, delivered from a
foreign thread as neonize does): nothing of a stranger is kept (11.4), Fetch never takes
its own messages as input however slow a send (11.5), and the owner is recognised in
every form WhatsApp uses (11.8)."""

from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path
from typing import Any

import pytest

from channels.whatsapp import _neonize as nz
from core.errors import ConfigError
from core.events import Outbound
from orchestrator.config import load_settings

from .builders import (
    FRIEND,
    OWNER,
    image,
    jid,
    message_event,
    self_chat,
    text_from,
    voice_note,
)
from .fake_client import FakeWhatsAppClient
from .harness import OWNER_CHAT, Harness, settings, started

STRANGER = "4917099999999"
OWNER_LID = "210987654321098"


# -- 11.4: nothing from a sender who is not allowed ----------------------------------------


async def test_a_strangers_media_is_never_downloaded_written_or_recorded(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, "channels.whatsapp")
    wa = await started(tmp_path, allowlist=[f"whatsapp:{FRIEND}"])
    try:
        for i in range(30):  # a flood of images and voice notes
            media = image("@fetch look") if i % 2 else voice_note()
            wa.client.emit(
                message_event(
                    media,
                    id=f"3EBSTRMEDIA{i}",
                    chat=jid(STRANGER),
                    sender=jid(STRANGER),
                    kind="media",
                )
            )
        # LID with the number beside it: not learned for a stranger either.
        wa.client.emit(
            message_event(
                image(),
                id="3EBSTRLID",
                chat=jid("99887766", "lid"),
                sender=jid("99887766", "lid"),
                sender_alt=jid(STRANGER),
                kind="media",
            )
        )
        wa.client.emit(
            message_event(
                image("@fetch mine"),
                id="3EBFRIENDIMG",
                chat=jid(FRIEND),
                sender=jid(FRIEND),
                kind="media",
            )
        )
        got = await wa.drain()
        assert [i.message_id for i in got] == ["3EBFRIENDIMG"]
        assert len(wa.client.named("download")) == 1  # the member's only
        assert {c.message_id for c in wa.client.named("read")} >= {"3EBFRIENDIMG"}
        assert not any(c.message_id.startswith("3EBSTR") for c in wa.client.named("read"))
        sessions = wa.home / "sessions"
        written = sorted(p.name for p in sessions.rglob("*") if p.is_file())
        assert written == ["3EBFRIENDIMG.jpg"]
        ledger = json.loads((wa.home / "whatsapp" / "ledger.json").read_text())
        assert STRANGER not in json.dumps(ledger) and "99887766" not in json.dumps(ledger)
        with pytest.raises(Exception, match="never written"):  # wrote first? not kept
            await wa.channel.send(Outbound("whatsapp", f"{STRANGER}@s.whatsapp.net", "hi"))
        # Logged, but rate-limited: 31 strangers' messages, a handful of lines.
        lines = [r for r in caplog.records if "non-allowed" in r.getMessage()]
        assert 1 <= len(lines) <= 10
    finally:
        await wa.channel.stop()


# -- 11.5: never its own messages as input, however slow a send ----------------------------


class EchoFirstClient(FakeWhatsAppClient):
    """WhatsApp echoes the message back to the linked account before the send call
    returns; this send returns only after the adapter has handled the echo (a sentinel
    behind it came through the FIFO pump), however long that takes."""

    harness: Harness | None = None

    async def send_message(self, to: Any, message: Any) -> str:
        message_id = await super().send_message(to, message)
        echo = message_event(
            nz.Message(conversation=str(message.conversation)),
            id=message_id,
            chat=to,
            sender=jid(OWNER, device=3),
            from_me=True,
        )
        self.emit(echo)
        assert self.harness is not None
        self.echo_seen = await self.harness.drain()
        return message_id


async def test_an_echo_that_arrives_before_the_send_returns_is_not_input(tmp_path: Path) -> None:
    client = EchoFirstClient()
    wa = await started(tmp_path, client)
    client.harness = wa
    try:
        wa.client.emit(self_chat("/status", id="3EB0ST"))
        await wa.next()
        sent = await wa.channel.send(Outbound("whatsapp", OWNER_CHAT, "/status"))
        assert client.echo_seen == []  # the echo, handled mid-send, reached nobody
        assert sent.message_id == client.named("send")[0].message_id
        # The same words typed by the owner afterwards are the owner's, not an echo.
        wa.client.emit(self_chat("/status", id="3EB0ST2"))
        assert [i.message_id for i in await wa.drain()] == ["3EB0ST2"]
        # And a late echo of the same send (a reconnect replays it) is caught by its id.
        wa.client.emit(
            message_event(
                nz.Message(conversation="/status"),
                id=sent.message_id,
                chat=jid(OWNER),
                sender=jid(OWNER),
                from_me=True,
            )
        )
        assert await wa.drain() == []
    finally:
        await wa.channel.stop()


# -- 11.8: the owner in every form ---------------------------------------------------------


async def test_the_owner_is_recognised_in_every_form_and_the_lid_is_learned(tmp_path: Path) -> None:
    wa = await started(tmp_path)
    try:
        # A phone-number JID with a device suffix (491…:12@s.whatsapp.net on the wire).
        wa.client.emit(
            message_event(
                nz.Message(conversation="hi"),
                id="3EBDEV",
                chat=jid(OWNER),
                sender=jid(OWNER, device=12),
            )
        )
        # LID-only before the mapping is known: not recognisably the owner, dropped.
        wa.client.emit(
            message_event(
                nz.Message(conversation="hi"),
                id="3EBLIDEARLY",
                chat=jid(OWNER_LID, "lid"),
                sender=jid(OWNER_LID, "lid"),
            )
        )
        first = await wa.drain()
        # LID with the phone number beside it (SenderAlt): the owner; the mapping is learned.
        wa.client.emit(
            message_event(
                nz.Message(conversation="hi"),
                id="3EBLIDALT",
                chat=jid(OWNER_LID, "lid"),
                sender=jid(OWNER_LID, "lid"),
                sender_alt=jid(OWNER),
            )
        )
        # Later, the LID alone (with a device): still the owner.
        wa.client.emit(
            message_event(
                nz.Message(conversation="hi"),
                id="3EBLIDONLY",
                chat=jid(OWNER_LID, "lid"),
                sender=jid(OWNER_LID, "lid", device=5),
            )
        )
        got = first + await wa.drain()
        assert [(i.message_id, i.sender, i.from_owner) for i in got] == [
            ("3EBDEV", OWNER, True),
            ("3EBLIDALT", OWNER, True),
            ("3EBLIDONLY", OWNER, True),
        ]
    finally:
        await wa.channel.stop()
    # The mapping is stored: a new process knows the LID at once.
    again = await started(tmp_path)
    try:
        again.client.emit(
            message_event(
                nz.Message(conversation="back"),
                id="3EBLIDNEXT",
                chat=jid(OWNER_LID, "lid"),
                sender=jid(OWNER_LID, "lid"),
            )
        )
        assert [(i.message_id, i.from_owner) for i in await again.drain()] == [("3EBLIDNEXT", True)]
    finally:
        await again.channel.stop()


@pytest.mark.parametrize(
    "spelling",
    [
        "+49 170 1234567",
        "0049 170 1234567",
        "49-170-1234567",
        "+49 (0)170 123 45 67",
        "491701234567",
    ],
)
async def test_every_spelling_of_the_owners_number_works(tmp_path: Path, spelling: str) -> None:
    wa = await started(tmp_path, ws=settings(owner=spelling))
    try:
        wa.client.emit(text_from("491701234567", "/status", id="3EBSPELL"))
        (got,) = await wa.drain()
        assert got.from_owner and got.sender == "491701234567"
    finally:
        await wa.channel.stop()


@pytest.mark.parametrize("number", ["+49 17", "+999 1234567", "12", "+1 555 123 45678", "call me"])
def test_a_number_that_cannot_be_real_refuses_the_start_naming_the_variable(
    tmp_path: Path, number: str
) -> None:
    with pytest.raises(ConfigError) as info:
        load_settings(
            None,
            {
                "FETCH_HOME": str(tmp_path),
                "FETCH__WHATSAPP__ENABLED": "true",
                "FETCH_WHATSAPP_OWNER": number,
            },
        )
    message = str(info.value)
    assert "environment FETCH_WHATSAPP_OWNER" in message and "whatsapp.owner" in message
    assert "real number" in message or "not a phone number" in message


def test_a_bad_number_in_the_file_names_the_file_and_key(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text("whatsapp:\n  enabled: true\n  owner: '+49 17'\n", encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        load_settings(path, {"FETCH_HOME": str(tmp_path)})
    message = str(info.value)
    assert str(path) in message and "whatsapp.owner" in message and "too short" in message


async def test_a_slow_send_does_not_hold_up_inbound(tmp_path: Path) -> None:
    """The old echo guard made the event pump wait (up to 5 s) while any send was in
    flight: a slow send held up the owner's next message. Now nothing waits."""
    release = asyncio.Event()

    class HangingClient(FakeWhatsAppClient):
        async def send_message(self, to: Any, message: Any) -> str:
            await release.wait()
            return await super().send_message(to, message)

    wa = await started(tmp_path, HangingClient())
    try:
        wa.client.emit(self_chat("/status", id="3EB0A"))
        await wa.next()
        sending = asyncio.create_task(wa.channel.send(Outbound("whatsapp", OWNER_CHAT, "…")))
        await asyncio.sleep(0.05)
        wa.client.emit(
            message_event(
                nz.Message(conversation="/stop"),
                id="3EB0STOP",
                chat=jid(OWNER),
                sender=jid(OWNER, device=2),
                from_me=True,
            )
        )
        got = await asyncio.wait_for(wa.next(), 1.0)
        assert got.message_id == "3EB0STOP" and got.from_owner
        release.set()
        await sending
    finally:
        await wa.channel.stop()


# -- 11.3: the adapter hands the owner's events over first ---------------------------------


async def test_the_owners_message_overtakes_a_members_flood_in_the_adapter(tmp_path: Path) -> None:
    wa = await started(tmp_path, allowlist=[f"whatsapp:{FRIEND}"])
    try:
        for i in range(200):
            wa.client.emit(text_from(FRIEND, f"msg {i}", id=f"3EBFL{i:04d}"))
        wa.client.emit(text_from(OWNER, "/stop", id="3EBOWNSTOP"))
        got = await wa.drain()
        ids = [i.message_id for i in got]
        assert len(ids) == 201 and ids.index("3EBOWNSTOP") <= 1
        member = [m for m in ids if m != "3EBOWNSTOP"]
        assert member == sorted(member)  # each sender's own order is kept
    finally:
        await wa.channel.stop()


def test_a_number_without_its_country_code_refuses_the_start_in_one_line(tmp_path: Path) -> None:
    """``whatsapp.owner: 5551234567`` used to start and lock the owner out (read as +55)."""
    path = tmp_path / "config.yaml"
    path.write_text("whatsapp:\n  enabled: true\n  owner: 5551234567\n", encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        load_settings(path, {"FETCH_HOME": str(tmp_path)})
    message = str(info.value)
    assert "\n" not in message and str(path) in message and "whatsapp.owner" in message
    assert "+ and the country code" in message
