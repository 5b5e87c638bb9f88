"""Voice notes on WhatsApp (issue 23, 1): real neonize audio protobufs through the real
adapter and the whole app, transcribed by a scripted server of our own over real
multipart HTTP; the words are then handled exactly as if typed."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Callable
from pathlib import Path

from neonize.proto.waE2E.WAWebProtobufsE2E_pb2 import AudioMessage

from channels.whatsapp import _neonize as nz
from orchestrator.config import Settings
from tests.channels.whatsapp.builders import FRIEND, OWNER, jid, message_event
from tests.channels.whatsapp.fake_client import FakeWhatsAppClient
from tests.channels.whatsapp.whole_app import OWNER_DIRECT, start_app, wait_for
from tests.fakes.transcription_server import TranscriptionServer

OGG = b"OggS\x00\x02" + b"\x01" * 4000  # what the phone sent (the server reads bytes only)


def voice(seconds: int = 4, *, ptt: bool = True, mime: str = "audio/ogg; codecs=opus") -> object:
    return nz.Message(
        audioMessage=AudioMessage(
            mimetype=mime,
            seconds=seconds,
            PTT=ptt,
            fileLength=len(OGG),
            directPath="/v/t62.7117-24/def",
            mediaKey=b"k" * 32,
        )
    )


def from_owner(message: object, id: str) -> object:
    return message_event(message, id=id, chat=jid(OWNER), sender=jid(OWNER))


def media_files(home: Path) -> list[Path]:
    return [p for p in (home / "sessions").rglob("media/*") if p.is_file()]


def inbound_rows(db: Path) -> list[str]:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return [str(r[0]) for r in conn.execute("SELECT message_id FROM inbound")]
    finally:
        conn.close()


async def test_a_voice_note_is_heard_then_handled_as_typed(
    make_settings: Callable[..., Settings],
) -> None:
    async with TranscriptionServer() as ears:
        ears.say("Status.")
        settings = make_settings(
            **OWNER_DIRECT,
            FETCH_TRANSCRIPTION_BASE_URL=ears.url,
            FETCH_TRANSCRIPTION_API_KEY="sk-voice",
            FETCH__TRANSCRIPTION__USD_PER_MINUTE="0.6",
        )
        client = FakeWhatsAppClient(media=OGG)
        app = await start_app(settings, client)
        try:
            client.emit(from_owner(voice(30), "3EB0VOICE1"))
            _, heard = await wait_for(client, "🎙 heard")
            assert heard == "🎙 heard: Status."
            # Then the words run as typed: "status" alone is the /status command.
            await wait_for(client, "Fetch ·")
            request = ears.requests[0]
            assert request.data == OGG
            assert request.model == "whisper-1"
            assert request.content_type == "audio/ogg"
            assert request.filename.endswith(".ogg")
            assert request.authorization == "Bearer sk-voice"
            await asyncio.wait_for(app.drain(), 10)
            # Only the words are kept: the audio file is gone.
            assert media_files(settings.home_dir) == []
            assert app.services is not None and app.services.costs is not None
            await app.services.store.usage.flush()
            rows = await app.services.store.usage.recent(50)
            voiced = [r for r in rows if r.source == "transcribe"]
            assert len(voiced) == 1 and voiced[0].status == 200
            assert abs(voiced[0].cost - 0.3) < 1e-9  # 30 s at $0.60 a minute
        finally:
            await app.__aexit__(None, None, None)


async def test_without_an_endpoint_one_line_says_how_to_set_one(
    make_settings: Callable[..., Settings],
) -> None:
    settings = make_settings(**OWNER_DIRECT)
    client = FakeWhatsAppClient(media=OGG)
    app = await start_app(settings, client)
    try:
        client.emit(from_owner(voice(5), "3EB0VOICE2"))
        _, line = await wait_for(client, "🎙")
        said = " ".join(line.split())  # one message (the phone wraps it at 60)
        assert said.startswith("🎙 Not heard: voice notes need a transcription endpoint")
        assert "transcription.base_url" in said and "FETCH_TRANSCRIPTION_BASE_URL" in said
        await asyncio.wait_for(app.drain(), 10)
        assert media_files(settings.home_dir) == []
        assert "3EB0VOICE2" not in inbound_rows(settings.db_path)
    finally:
        await app.__aexit__(None, None, None)


async def test_too_long_is_refused_before_any_download(
    make_settings: Callable[..., Settings],
) -> None:
    async with TranscriptionServer() as ears:
        settings = make_settings(
            **OWNER_DIRECT,
            FETCH_TRANSCRIPTION_BASE_URL=ears.url,
            FETCH__TRANSCRIPTION__MAX_SECONDS="60",
        )
        client = FakeWhatsAppClient(media=OGG)
        app = await start_app(settings, client)
        try:
            client.emit(from_owner(voice(61), "3EB0LONG"))
            _, line = await wait_for(client, "🎙")
            assert " ".join(line.split()) == (
                "🎙 Not heard: it is 1:01 long; the limit is 1:00 (transcription.max_seconds)"
            )
            await asyncio.wait_for(app.drain(), 10)
            assert client.named("download") == []
            assert ears.requests == []
            assert media_files(settings.home_dir) == []
            assert "3EB0LONG" not in inbound_rows(settings.db_path)
        finally:
            await app.__aexit__(None, None, None)


async def test_an_unsupported_audio_type_is_refused(
    make_settings: Callable[..., Settings],
) -> None:
    async with TranscriptionServer() as ears:
        settings = make_settings(**OWNER_DIRECT, FETCH_TRANSCRIPTION_BASE_URL=ears.url)
        client = FakeWhatsAppClient(media=OGG)
        app = await start_app(settings, client)
        try:
            client.emit(from_owner(voice(3, ptt=False, mime="audio/x-midi"), "3EB0MIDI"))
            _, line = await wait_for(client, "🎙")
            assert line == "🎙 Not heard: audio/x-midi is not an accepted audio type"
            await asyncio.wait_for(app.drain(), 10)
            assert client.named("download") == [] and ears.requests == []
        finally:
            await app.__aexit__(None, None, None)


async def test_a_strangers_voice_note_is_never_downloaded(
    make_settings: Callable[..., Settings],
) -> None:
    async with TranscriptionServer() as ears:
        settings = make_settings(**OWNER_DIRECT, FETCH_TRANSCRIPTION_BASE_URL=ears.url)
        client = FakeWhatsAppClient(media=OGG)
        app = await start_app(settings, client)
        try:
            stranger = message_event(voice(3), id="3EB0STR", chat=jid(FRIEND), sender=jid(FRIEND))
            client.emit(stranger)
            client.emit(from_owner(nz.Message(conversation="status"), "3EB0AFTER"))
            await wait_for(client, "Fetch ·")
            await asyncio.wait_for(app.drain(), 10)
            assert client.named("download") == [] and ears.requests == []
            assert media_files(settings.home_dir) == []
        finally:
            await app.__aexit__(None, None, None)


async def test_every_endpoint_failing_is_one_clear_line_and_the_fallback_is_used(
    make_settings: Callable[..., Settings],
) -> None:
    async with TranscriptionServer() as first, TranscriptionServer() as second:
        first.fail(500)
        second.say("fix the typo")
        one, two = (
            f"{{name: first, base_url: '{first.url}'}}",
            f"{{name: second, base_url: '{second.url}'}}",
        )
        chain = f"[{one}, {two}]"
        settings = make_settings(**OWNER_DIRECT, FETCH__TRANSCRIPTION__PROVIDERS=chain)
        client = FakeWhatsAppClient(media=OGG)
        app = await start_app(settings, client)
        try:
            client.emit(from_owner(voice(3), "3EB0FALL"))
            _, heard = await wait_for(client, "🎙")
            assert heard == "🎙 heard: fix the typo"
            await asyncio.wait_for(app.drain(), 20)
            first.fail(503)
            second.fail(500)
            after = len(client.calls)
            client.emit(from_owner(voice(3), "3EB0FAIL2"))
            _, line = await wait_for(client, "🎙", after)
            line = " ".join(line.split())
            assert line.startswith("🎙 Not heard: every transcription endpoint failed: ")
            assert "first: answered HTTP 503" in line and "second: answered HTTP 500" in line
            await asyncio.wait_for(app.drain(), 10)
            assert app.services is not None
            await app.services.store.usage.flush()
            rows = await app.services.store.usage.recent(50)
            assert sorted((r.provider, r.status) for r in rows if r.source == "transcribe") == [
                ("first", 500),
                ("first", 503),
                ("second", 200),
                ("second", 500),
            ]
        finally:
            await app.__aexit__(None, None, None)


async def test_a_failed_download_is_one_line_and_nothing_is_kept(
    make_settings: Callable[..., Settings],
) -> None:
    async with TranscriptionServer() as ears:
        settings = make_settings(**OWNER_DIRECT, FETCH_TRANSCRIPTION_BASE_URL=ears.url)
        client = FakeWhatsAppClient(media=RuntimeError("media server said 410"))
        app = await start_app(settings, client)
        try:
            client.emit(from_owner(voice(3), "3EB0GONE"))
            _, line = await wait_for(client, "🎙")
            assert line == "🎙 Not heard: the download failed"
            await asyncio.wait_for(app.drain(), 10)
            assert ears.requests == [] and media_files(settings.home_dir) == []
            assert "3EB0GONE" not in inbound_rows(settings.db_path)
        finally:
            await app.__aexit__(None, None, None)


async def test_a_members_voice_notes_are_limited_before_any_transcription(
    make_settings: Callable[..., Settings],
) -> None:
    async with TranscriptionServer(default="hello") as ears:
        settings = make_settings(
            **OWNER_DIRECT,
            FETCH_TRANSCRIPTION_BASE_URL=ears.url,
            FETCH__ALLOWLIST=f"[whatsapp:{FRIEND}]",
            FETCH__GATEWAY__RATE_PER_MINUTE="1",
        )
        client = FakeWhatsAppClient(media=OGG)
        app = await start_app(settings, client)
        try:
            for n in range(3):
                note = message_event(
                    voice(3), id=f"3EB0MEM{n}", chat=jid(FRIEND), sender=jid(FRIEND)
                )
                client.emit(note)
            _, line = await wait_for(client, "🎙 Not heard")
            assert "more than 1 voice notes a minute" in " ".join(line.split())
            await asyncio.wait_for(app.drain(), 10)
            assert len(ears.requests) == 1  # the first only; the others cost nothing
            assert sum("🎙 Not heard" in t for t in client.sent_texts) == 1  # told once
            # The owner is never limited by a member's flood.
            for n in range(2):
                client.emit(from_owner(voice(3), f"3EB0OWN{n}"))
            async with asyncio.timeout(10):
                while len(ears.requests) < 3:  # noqa: ASYNC110
                    await asyncio.sleep(0.02)
        finally:
            await app.__aexit__(None, None, None)


async def test_a_voice_note_delivered_again_after_a_restart_is_not_heard_twice(
    make_settings: Callable[..., Settings],
) -> None:
    """WhatsApp's offline backlog may deliver again, after a restart, a note Fetch had
    heard and handled: it is not transcribed (paid for), said or run a second time,
    and its downloaded audio is not kept."""
    async with TranscriptionServer() as ears:
        ears.say("Status.")
        settings = make_settings(
            **OWNER_DIRECT,
            FETCH_TRANSCRIPTION_BASE_URL=ears.url,
            FETCH_TRANSCRIPTION_API_KEY="sk-voice",
        )
        client = FakeWhatsAppClient(media=OGG)
        app = await start_app(settings, client)
        try:
            client.emit(from_owner(voice(5), "3EB0AGAIN1"))
            await wait_for(client, "🎙 heard")
            await wait_for(client, "Fetch ·")
            await asyncio.wait_for(app.drain(), 10)
        finally:
            await app.__aexit__(None, None, None)
        assert len(ears.requests) == 1

        again = FakeWhatsAppClient(media=OGG)
        app = await start_app(settings, again)
        try:
            again.emit(from_owner(voice(5), "3EB0AGAIN1"))
            again.emit(from_owner(nz.Message(conversation="/help"), "3EB0AFTER1"))
            await wait_for(again, "I'm Fetch")  # the next message is answered: the first was
            await asyncio.wait_for(app.drain(), 10)
            assert len(ears.requests) == 1
            assert not [t for t in again.sent_texts if "🎙" in t or "Fetch ·" in t]
            assert media_files(settings.home_dir) == []
        finally:
            await app.__aexit__(None, None, None)
