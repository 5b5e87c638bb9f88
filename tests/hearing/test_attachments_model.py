"""Images and files reach the orchestrator model (issue 23, 2): a WhatsApp screenshot
(a real neonize image message) goes as image content to an endpoint whose settings say
it takes images, and as words to one that does not (a chain falls back from one to the
other); a log sent as a Telegram document (the Bot API's shape, fetched with getFile
after the gate) goes inline as text. Through the real openai SDK and real HTTP."""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from neonize.proto.waE2E.WAWebProtobufsE2E_pb2 import ImageMessage

from channels.telegram import TelegramChannel
from channels.telegram.channel import Backoff
from channels.whatsapp import _neonize as nz
from orchestrator.app import build_app
from orchestrator.config import Settings
from tests.channels.telegram.support import OWNER, settings_for
from tests.channels.whatsapp.builders import OWNER as WA_OWNER
from tests.channels.whatsapp.builders import jid, message_event
from tests.channels.whatsapp.fake_client import FakeWhatsAppClient
from tests.channels.whatsapp.whole_app import OWNER_DIRECT, start_app, wait_for
from tests.fakes.model_server import Error, ScriptedModelServer, Text
from tests.fakes.telegram_api import FakeTelegramApi

SHOT = b"\x89PNG\r\n\x1a\n" + b"\x07" * 512
LOG = "Traceback (most recent call last):\n  File app.py, line 1\nZeroDivisionError\n"


def screenshot(id: str) -> Any:
    image = nz.Message(
        imageMessage=ImageMessage(
            mimetype="image/png",
            caption="what is wrong here?",
            fileLength=len(SHOT),
            height=3,
            width=4,
            directPath="/v/t62.7118-24/x",
            mediaKey=b"k" * 32,
            fileSHA256=b"s" * 32,
            fileEncSHA256=b"e" * 32,
        )
    )
    return message_event(image, id=id, chat=jid(WA_OWNER), sender=jid(WA_OWNER))


def last_user(server: ScriptedModelServer) -> Any:
    bodies = [r.body for r in server.requests if r.dialect == "openai_chat" and r.body]
    users = [m for m in bodies[-1]["messages"] if m["role"] == "user"]
    return users[-2]["content"]  # the last one is the turn's session note


async def test_an_image_goes_as_image_content_where_the_model_takes_images(
    make_settings: Callable[..., Settings],
) -> None:
    async with ScriptedModelServer() as model:
        model.script(Text("A division by zero."))
        settings = make_settings(
            **OWNER_DIRECT,
            FETCH_MODEL_BASE_URL=model.url + "/v1",
            FETCH_MODEL_API_KEY="sk-orch",
            FETCH__MODEL__IMAGES="true",
        )
        client = FakeWhatsAppClient(media=SHOT)
        app = await start_app(settings, client)
        try:
            client.emit(screenshot("3EB0IMG1"))
            await wait_for(client, "A division by zero.")
        finally:
            await app.__aexit__(None, None, None)
        content = last_user(model)
        assert content[0] == {"type": "text", "text": "what is wrong here?"}
        assert content[1] == {
            "type": "image_url",
            "image_url": {"url": "data:image/png;base64," + base64.b64encode(SHOT).decode()},
        }


async def test_a_chain_falls_back_to_a_model_without_images_in_words(
    make_settings: Callable[..., Settings],
) -> None:
    async with ScriptedModelServer() as vision, ScriptedModelServer() as plain:
        vision.script(Error(500))
        plain.script(Text("I cannot see images, but tell me the error."))
        chain = (
            f"[{{name: vision, base_url: '{vision.url}/v1', images: true}}, "
            f"{{name: plain, base_url: '{plain.url}/v1'}}]"
        )
        settings = make_settings(
            **OWNER_DIRECT,
            FETCH__MODEL__PROVIDERS=chain,
            FETCH__MODEL__MAX_RETRIES="0",
        )
        client = FakeWhatsAppClient(media=SHOT)
        app = await start_app(settings, client)
        try:
            client.emit(screenshot("3EB0IMG2"))
            await wait_for(client, "I cannot see images")
        finally:
            await app.__aexit__(None, None, None)
        assert last_user(vision)[1]["type"] == "image_url"
        assert "fetch_alt" not in last_user(vision)[1]
        words = last_user(plain)
        assert [p["type"] for p in words] == ["text", "text"]
        assert "sent an image, 3EB0IMG2.png; this model is not shown images" in words[1]["text"]


@pytest.fixture
async def tg() -> AsyncIterator[FakeTelegramApi]:
    async with FakeTelegramApi() as fake:
        yield fake


async def test_a_log_sent_on_telegram_goes_inline_as_text(
    tg: FakeTelegramApi, make_settings: Callable[..., Settings]
) -> None:
    async with ScriptedModelServer() as model:
        model.script(Text("Line 1 divides by zero."))
        settings = make_settings(FETCH_MODEL_BASE_URL=model.url + "/v1", FETCH_MODEL_API_KEY="k")
        channel = TelegramChannel(
            settings_for(tg), poll_timeout=1, backoff=Backoff(0.05, 0.2), home=settings.home_dir
        )
        async with build_app(settings, channels=[channel]):
            file_id = tg.add_file(LOG.encode(), ".log")
            document = {
                "file_id": file_id,
                "file_unique_id": "u1",
                "file_name": "crash.log",
                "mime_type": "text/plain",
                "file_size": len(LOG),
            }
            tg.push_media("document", document, caption="why?", chat_id=OWNER, from_id=OWNER)
            await tg.wait_for_text("Line 1 divides by zero.", timeout=30)
        content = last_user(model)
        assert content[0] == {"type": "text", "text": "why?"}
        assert content[1]["type"] == "text"
        assert content[1]["text"] == f"[the owner sent crash.log]\n```\n{LOG}\n```"


async def test_a_whatsapp_document_goes_inline_and_a_zip_is_refused_in_a_line(
    make_settings: Callable[..., Settings],
) -> None:
    from neonize.proto.waE2E.WAWebProtobufsE2E_pb2 import DocumentMessage

    def document(name: str, mime: str, size: int) -> Any:
        return nz.Message(
            documentMessage=DocumentMessage(
                mimetype=mime,
                title=name,
                fileName=name,
                caption="why?",
                fileLength=size,
                directPath="/v/t62.7119-24/doc",
                mediaKey=b"k" * 32,
            )
        )

    async with ScriptedModelServer() as model:
        model.script(Text("Line 1 divides by zero."), Text("I cannot open zips."))
        settings = make_settings(
            **OWNER_DIRECT, FETCH_MODEL_BASE_URL=model.url + "/v1", FETCH_MODEL_API_KEY="k"
        )
        client = FakeWhatsAppClient(media=LOG.encode())
        app = await start_app(settings, client)
        try:
            chat, who = jid(WA_OWNER), jid(WA_OWNER)
            log_doc = document("crash.log", "text/plain", len(LOG))
            client.emit(message_event(log_doc, id="3EB0DOC1", chat=chat, sender=who))
            await wait_for(client, "Line 1 divides by zero.")
            assert last_user(model)[1]["text"] == f"[the owner sent crash.log]\n```\n{LOG}\n```"
            downloads = len(client.named("download"))
            zipped = document("src.zip", "application/zip", 2048)
            client.emit(message_event(zipped, id="3EB0DOC2", chat=chat, sender=who))
            await wait_for(client, "I cannot open zips.")
            assert len(client.named("download")) == downloads  # never fetched
            assert last_user(model) == (
                "why?\n[document src.zip not received: application/zip is not an accepted "
                "document type]"
            )
        finally:
            await app.__aexit__(None, None, None)


async def test_a_telegram_photo_goes_as_an_image_and_a_huge_file_is_never_fetched(
    tg: FakeTelegramApi, make_settings: Callable[..., Settings]
) -> None:
    async with ScriptedModelServer() as model:
        model.script(Text("A red square."), Text("Too big for me."))
        settings = make_settings(
            FETCH_MODEL_BASE_URL=model.url + "/v1",
            FETCH_MODEL_API_KEY="k",
            FETCH__MODEL__IMAGES="true",
        )
        channel = TelegramChannel(
            settings_for(tg), poll_timeout=1, backoff=Backoff(0.05, 0.2), home=settings.home_dir
        )
        async with build_app(settings, channels=[channel]):
            small, large = tg.add_file(b"thumb", ".jpg"), tg.add_file(SHOT, ".jpg")
            sizes = [
                {"file_id": small, "file_unique_id": "s", "width": 90, "height": 90},
                {"file_id": large, "file_unique_id": "l", "width": 1280, "height": 960},
            ]
            tg.push_media("photo", sizes, caption="what is it?", chat_id=OWNER, from_id=OWNER)
            await tg.wait_for_text("A red square.", timeout=30)
            image = last_user(model)[1]
            # The largest size is the photo; Telegram's photos are JPEG.
            assert image["image_url"]["url"] == (
                "data:image/jpeg;base64," + base64.b64encode(SHOT).decode()
            )
            huge = {"file_id": "BIG", "file_name": "dump.log", "mime_type": "text/plain"}
            huge["file_size"] = 21 * 1024 * 1024  # type: ignore[assignment]
            tg.push_media("document", huge, chat_id=OWNER, from_id=OWNER)
            await tg.wait_for_text("Too big for me.", timeout=30)
            assert [c.params["file_id"] for c in tg.calls_to("getFile")] == [large]
            assert last_user(model) == (
                "[document dump.log not received: 21.0 MB is over the 20.0 MB limit]"
            )
