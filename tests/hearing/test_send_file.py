"""Files back (issue 23, 3): ``/send <path>`` sends a file of the active repo, an image
as an image, on WhatsApp (a real neonize image or document message) and on Telegram (a
real multipart sendPhoto / sendDocument); paths are checked as the read tools check them
(no escape through a symlink, no ``..``, no ``.git``), a channel's limit is one line."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from channels.telegram import TelegramChannel
from channels.telegram.channel import Backoff
from channels.whatsapp import _neonize as nz
from orchestrator.agent.send_file import NotSendable, read_repo_file
from orchestrator.app import build_app
from orchestrator.config import Settings
from tests.channels.telegram.support import OWNER, settings_for
from tests.channels.whatsapp.builders import OWNER as WA_OWNER
from tests.channels.whatsapp.builders import jid, message_event
from tests.channels.whatsapp.fake_client import FakeWhatsAppClient
from tests.channels.whatsapp.whole_app import OWNER_DIRECT, start_app, wait_for
from tests.conftest import git
from tests.fakes.model_server import ScriptedModelServer, Text, ToolCall
from tests.fakes.telegram_api import FakeTelegramApi

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 2048


@pytest.fixture
async def tg() -> AsyncIterator[FakeTelegramApi]:
    async with FakeTelegramApi() as fake:
        yield fake


def add_files(workspace: Path) -> Path:
    repo = workspace / "demo"
    (repo / "docs").mkdir(exist_ok=True)
    (repo / "docs" / "shot.png").write_bytes(PNG)
    (repo / "crash.log").write_text("Traceback: boom\n")
    git(repo, "add", "-A")
    git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "files")
    return repo


def say(client: FakeWhatsAppClient, text: str, id: str) -> None:
    client.emit(
        message_event(
            nz.Message(conversation=text), id=id, chat=jid(WA_OWNER), sender=jid(WA_OWNER)
        )
    )


async def test_send_on_whatsapp_an_image_as_an_image_a_log_as_a_document(
    make_settings: Callable[..., Settings], workspace: Path
) -> None:
    add_files(workspace)
    settings = make_settings(**OWNER_DIRECT)
    client = FakeWhatsAppClient()
    app = await start_app(settings, client)
    try:
        say(client, "/workspace demo", "3EBSEND0")
        await wait_for(client, "Now working in demo")
        say(client, "/send docs/shot.png", "3EBSEND1")
        await wait_for(client, "📎 Sent docs/shot.png of demo")
        say(client, "/send crash.log", "3EBSEND2")
        await wait_for(client, "📎 Sent crash.log of demo")
        media = client.named("send_media")
        assert [c.extra["kind"] for c in media] == ["image", "document"]
        image, doc = (c.extra["message"] for c in media)
        assert image.HasField("imageMessage") and image.imageMessage.mimetype == "image/png"
        assert media[0].extra["data"] == PNG
        assert doc.HasField("documentMessage")
        assert doc.documentMessage.fileName == "crash.log"
        assert doc.documentMessage.mimetype == "text/plain"
        assert media[1].extra["data"] == b"Traceback: boom\n"
        assert all(c.chat == f"{WA_OWNER}@s.whatsapp.net" for c in media)
    finally:
        await app.__aexit__(None, None, None)


async def test_send_on_telegram_is_a_real_multipart_upload(
    tg: FakeTelegramApi, make_settings: Callable[..., Settings], workspace: Path
) -> None:
    add_files(workspace)
    settings = make_settings()
    channel = TelegramChannel(settings_for(tg), poll_timeout=1, backoff=Backoff(0.05, 0.2))
    async with build_app(settings, channels=[channel]):
        tg.push_message("/send demo docs/shot.png", chat_id=OWNER, from_id=OWNER)
        await tg.wait_for_text("📎 Sent docs/shot.png of demo", timeout=30)
        tg.push_message("/send demo crash.log", chat_id=OWNER, from_id=OWNER)
        await tg.wait_for_text("📎 Sent crash.log of demo", timeout=30)
        photo, document = tg.uploads
        assert (photo.method, photo.data, photo.content_type) == ("sendPhoto", PNG, "image/png")
        assert (document.method, document.filename) == ("sendDocument", "crash.log")
        assert document.data == b"Traceback: boom\n" and document.chat_id == str(OWNER)


async def test_refusals_are_one_line_and_send_nothing(
    tg: FakeTelegramApi, make_settings: Callable[..., Settings], workspace: Path, tmp_path: Path
) -> None:
    repo = add_files(workspace)
    secret = tmp_path / "secret.txt"
    secret.write_text("not yours\n")
    os.symlink(secret, repo / "out.txt")  # a link out of the repository
    (repo / "big.bin").write_bytes(b"\0" * (50 * 1024 * 1024 + 1))  # over Telegram's 50 MB
    settings = make_settings()
    channel = TelegramChannel(settings_for(tg), poll_timeout=1, backoff=Backoff(0.05, 0.2))
    async with build_app(settings, channels=[channel]):
        cases = {
            "/send demo out.txt": "leads outside the repository",
            "/send demo ../secret.txt": "⚠️",
            "/send demo .git/config": "⚠️",
            "/send demo nothing.txt": "no file 'nothing.txt'",
            "/send demo docs": "is not a file",
            "/send demo big.bin": "telegram takes files up to 50.0 MB",
            "/send": "name a file",
        }
        for command, needle in cases.items():
            before = len(tg.sent())
            tg.push_message(command, chat_id=OWNER, from_id=OWNER)
            async with asyncio.timeout(30):
                while len(tg.sent()) == before:  # noqa: ASYNC110
                    await asyncio.sleep(0.02)
            line = " ".join(tg.sent()[-1].text.split())
            assert line.startswith("⚠️") and needle in line, (command, line)
        assert tg.uploads == []


def test_reading_is_confined_like_the_read_tools(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    (root / "sub").mkdir(parents=True)
    (root / "sub" / "a.txt").write_text("a")
    (tmp_path / "outside.txt").write_text("not the repo's")
    os.symlink(tmp_path, root / "escape")
    os.symlink("sub/a.txt", root / "inside-link")
    assert read_repo_file(root, "sub/a.txt").data == b"a"
    assert read_repo_file(root, "inside-link").data == b"a"  # a link that stays inside
    for bad in ("escape/outside.txt", "/etc/passwd", "sub/../../x", ".git/HEAD"):
        with pytest.raises(NotSendable):
            read_repo_file(root, bad)
    with pytest.raises(NotSendable, match="the limit is"):
        read_repo_file(root, "sub/a.txt", limit=0)


async def test_the_models_send_message_with_a_file_sends_it_through_the_chats_channel(
    tg: FakeTelegramApi, make_settings: Callable[..., Settings], workspace: Path
) -> None:
    add_files(workspace)
    async with ScriptedModelServer() as model:
        model.script(
            ToolCall("send_message", {"repo": "demo", "file": "docs/shot.png", "text": "it"}),
            ToolCall("send_message", {"repo": "demo", "file": "../../etc/passwd", "text": ""}),
            Text("Sent you the screenshot."),
        )
        settings = make_settings(
            FETCH_MODEL_BASE_URL=model.url + "/v1",
            FETCH_MODEL_API_KEY="sk-orch",
            FETCH__MODEL__MAX_RETRIES="0",
        )
        channel = TelegramChannel(settings_for(tg), poll_timeout=1, backoff=Backoff(0.05, 0.2))
        async with build_app(settings, channels=[channel]):
            tg.push_message("send me the screenshot in demo", chat_id=OWNER, from_id=OWNER)
            await tg.wait_for_text("Sent you the screenshot.", timeout=30)
        (photo,) = tg.uploads
        assert (photo.method, photo.data, photo.caption) == ("sendPhoto", PNG, "it")
        bodies = [r.body for r in model.requests if r.dialect == "openai_chat" and r.body]
        results = [m for m in bodies[-1]["messages"] if m.get("role") == "tool"]
        assert "📎 Sent docs/shot.png of demo" in str(results[0]["content"])
        assert "'..' is not allowed" in str(results[1]["content"])
