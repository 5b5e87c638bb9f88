"""Voice notes on Telegram (issue 23, 1): Bot API updates in their real shapes (a
``voice`` with no text), the file fetched with getFile after the gate, transcribed by a
scripted server over real multipart HTTP, and "stop" said while a real CLI works in the
kennel stops it, as typing it would."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from channels.telegram import TelegramChannel
from channels.telegram.channel import Backoff
from orchestrator.app import build_app
from orchestrator.config import Settings
from tests.channels.telegram.support import OWNER, settings_for
from tests.fakes.telegram_api import FakeTelegramApi
from tests.fakes.transcription_server import TranscriptionServer

OGG = b"OggS\x00\x02" + b"\x02" * 3000
STRANGER = 999
# A stand-in `claude` that works for ~20 s unless stopped.
SLOW = (
    "#!/bin/sh\nsed -i 's/Teh/The/' README.md\n"
    "i=0; while [ $i -lt 200 ]; do sleep 0.1; i=$((i+1)); done\n"
    'echo \'{"type":"result","subtype":"success","result":"fixed it"}\'\n'
)


@pytest.fixture
async def tg() -> AsyncIterator[FakeTelegramApi]:
    async with FakeTelegramApi() as fake:
        yield fake


def channel_for(tg: FakeTelegramApi, settings: Settings) -> TelegramChannel:
    """The channel as the app wires it: its home for files and the audio limit."""
    return TelegramChannel(
        settings_for(tg),
        poll_timeout=1,
        backoff=Backoff(0.05, 0.2),
        home=settings.home_dir,
        max_audio_seconds=settings.transcription.max_seconds,
    )


async def test_stop_said_while_a_task_works_stops_it(
    tg: FakeTelegramApi,
    make_settings: Callable[..., Settings],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    cli = bin_dir / "claude"
    cli.write_text(SLOW)
    cli.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    async with TranscriptionServer() as ears:
        ears.say("Stop!")
        settings = make_settings(
            FETCH_HARNESS="claude-code",
            ANTHROPIC_API_KEY="sk-x",
            FETCH_TRANSCRIPTION_BASE_URL=ears.url,
        )
        async with build_app(settings, channels=[channel_for(tg, settings)]) as app:
            tg.push_message("fix the typo in README.md of demo", chat_id=OWNER, from_id=OWNER)
            await tg.wait_for_text("On it", timeout=30)
            assert app.services is not None
            tg.push_voice(OGG, duration=2, chat_id=OWNER, from_id=OWNER)
            heard = await tg.wait_for_text("🎙", timeout=30)
            assert heard.text == "🎙 heard: Stop!"
            stopped = await tg.wait_for_text("⏹ Stopped task", timeout=30)
            assert "No changes" in stopped.text or "Stopped task #" in stopped.text
            assert ears.requests[0].data == OGG
            assert tg.downloads == ["documents/file_1.oga"]
            assert not app.services.supervisor.running("run:")


async def test_a_strangers_voice_is_never_fetched_and_an_owners_is_heard(
    tg: FakeTelegramApi, make_settings: Callable[..., Settings]
) -> None:
    async with TranscriptionServer() as ears:
        ears.say("Status")
        settings = make_settings(FETCH_TRANSCRIPTION_BASE_URL=ears.url)
        async with build_app(settings, channels=[channel_for(tg, settings)]) as app:
            tg.push_voice(OGG, chat_id=STRANGER, from_id=STRANGER)
            tg.push_voice(OGG, chat_id=OWNER, from_id=OWNER)
            assert (await tg.wait_for_text("🎙", timeout=30)).text == "🎙 heard: Status"
            await tg.wait_for_text("Fetch ·", timeout=30)  # "status" said is /status
            await asyncio.wait_for(app.drain(), 10)
            # One getFile and one download: the owner's; the stranger's was never asked.
            assert [c.params["file_id"] for c in tg.calls_to("getFile")] == ["FILE0002"]
            assert tg.downloads == ["documents/file_2.oga"] and len(ears.requests) == 1
            assert [m for m in tg.sent() if m.chat_id == str(STRANGER)] == []
            media = list((settings.home_dir / "sessions").rglob("media/*"))
            assert [p for p in media if p.is_file()] == []  # only the words are kept


async def test_a_long_voice_note_is_refused_before_the_download(
    tg: FakeTelegramApi, make_settings: Callable[..., Settings]
) -> None:
    async with TranscriptionServer() as ears:
        settings = make_settings(
            FETCH_TRANSCRIPTION_BASE_URL=ears.url, FETCH__TRANSCRIPTION__MAX_SECONDS="120"
        )
        async with build_app(settings, channels=[channel_for(tg, settings)]) as app:
            tg.push_voice(OGG, duration=600, chat_id=OWNER, from_id=OWNER)
            line = await tg.wait_for_text("🎙", timeout=30)
            assert " ".join(line.text.split()) == (
                "🎙 Not heard: it is 10:00 long; the limit is 2:00 (transcription.max_seconds)"
            )
            await asyncio.wait_for(app.drain(), 10)
            assert tg.calls_to("getFile") == [] and tg.downloads == [] and ears.requests == []
