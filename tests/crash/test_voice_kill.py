"""A voice note is not lost when Fetch is killed mid-transcription (issue 23, 1): the
real ``fetch`` (Telegram against a fake Bot API of the test's own, transcription against
a scripted server that holds its answer) is SIGKILLed while the note is being heard. At
the next start the note is heard again, once, and answered as if typed; its audio and
its pending entry (orchestrator/hearing/pending.py) are gone afterwards. A note whose
audio went missing meanwhile is said lost, never silently dropped."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sqlite3
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from orchestrator.app import build_app
from orchestrator.config import Settings
from tests.channels.telegram.support import OWNER
from tests.cli.test_fetch_command import _env, _fetch_executable
from tests.fakes.telegram_api import FakeTelegramApi
from tests.fakes.transcription_server import TranscriptionServer
from tests.hearing.test_voice_telegram import channel_for

OGG = b"OggS\x00\x02" + b"\x03" * 3000


@pytest.fixture
async def tg() -> AsyncIterator[FakeTelegramApi]:
    async with FakeTelegramApi() as fake:
        yield fake


async def _fetch(
    home: Path, tg: FakeTelegramApi, ears: TranscriptionServer
) -> asyncio.subprocess.Process:
    env = _env(
        home,
        FETCH__TELEGRAM__ENABLED="true",
        FETCH__TELEGRAM__TOKEN=tg.token,
        FETCH__TELEGRAM__OWNER_ID=str(OWNER),
        FETCH__TELEGRAM__API_BASE=tg.url,
        FETCH_TRANSCRIPTION_BASE_URL=ears.url,
        FETCH_TRANSCRIPTION_API_KEY="sk-hear",
    )
    # What it prints, for a failure's reading (the child keeps its own descriptor).
    with (home.parent / "fetch.out").open("ab") as out:
        return await asyncio.create_subprocess_exec(
            _fetch_executable(),
            env=env,
            cwd=str(home.parent),
            stdin=asyncio.subprocess.PIPE,  # the terminal channel reads it; kept open
            stdout=out,
            stderr=asyncio.subprocess.STDOUT,
            start_new_session=True,
        )


async def _end(proc: asyncio.subprocess.Process, sig: signal.Signals) -> None:
    if proc.returncode is None:
        os.killpg(proc.pid, sig)  # its own group: only what this test started
        await asyncio.wait_for(proc.wait(), 30)


def _inbound(db: Path) -> list[tuple[str, str]]:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return [(str(m), str(s)) for m, s in conn.execute("SELECT message_id, status FROM inbound")]
    finally:
        conn.close()


async def test_a_voice_note_cut_short_by_sigkill_is_heard_after_the_restart(
    tg: FakeTelegramApi, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    async with TranscriptionServer(delay=120) as ears:
        first = await _fetch(home, tg, ears)
        try:
            tg.push_voice(OGG, duration=3, chat_id=OWNER, from_id=OWNER)
            async with asyncio.timeout(60):  # held by the server: mid-transcription
                while not ears.requests:  # noqa: ASYNC110
                    await asyncio.sleep(0.05)
            pending = list((home / "hearing" / "pending").glob("*.json"))
            assert len(pending) == 1
            audio = json.loads(pending[0].read_text())["attachments"][0]["path"]
            assert Path(audio).read_bytes() == OGG  # noqa: ASYNC240
        finally:
            await _end(first, signal.SIGKILL)
        assert first.returncode == -signal.SIGKILL
        assert not [m for m in tg.sent() if "🎙" in m.text]  # never heard, never said
        assert _inbound(home / "fetch.db") == []  # the inbox never had it

        ears.delay = 0
        ears.say("thanks")
        second = await _fetch(home, tg, ears)
        try:
            heard = await tg.wait_for_text("🎙 heard", timeout=60)
            assert heard.text == "🎙 heard: thanks"
            await tg.wait_for_text("Any time", timeout=30)
            assert len(ears.requests) == 2 and ears.requests[1].data == OGG
            async with asyncio.timeout(30):
                while [s for _, s in _inbound(home / "fetch.db")] != ["done"]:  # noqa: ASYNC110
                    await asyncio.sleep(0.05)
            assert len([m for m in tg.sent() if "🎙" in m.text]) == 1  # heard once
            assert not os.path.exists(audio)  # noqa: ASYNC240 (only the words are kept)
            assert list((home / "hearing" / "pending").glob("*")) == []
        finally:
            await _end(second, signal.SIGTERM)


async def test_a_note_whose_audio_is_gone_is_said_lost(
    tg: FakeTelegramApi, make_settings: Callable[..., Settings]
) -> None:
    async with TranscriptionServer() as ears:
        settings = make_settings(FETCH_TRANSCRIPTION_BASE_URL=ears.url)
        pending = settings.home_dir / "hearing" / "pending"
        pending.mkdir(parents=True)
        payload = {
            "channel": "telegram",
            "chat": str(OWNER),
            "sender": str(OWNER),
            "message_id": "77",
            "text": "[voice note 0:03]",
            "from_owner": True,
            "attachments": [
                {"kind": "audio", "path": str(settings.home_dir / "gone.oga"), "mime": "audio/ogg"}
            ],
        }
        (pending / "a.json").write_text(json.dumps(payload))
        async with build_app(settings, channels=[channel_for(tg, settings)]):
            lost = await tg.wait_for_text("🎙", timeout=30)
            assert "lost in a restart" in lost.text and "send it again" in lost.text
            assert list(pending.glob("*")) == []
        assert ears.requests == []
