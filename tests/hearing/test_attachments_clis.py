"""The other CLIs take the screenshot their own way (issue 23, 2), for real: a WhatsApp
image (a real neonize image message with its caption) starts a task; codex gets it with
its first prompt (--image), copilot as an attachment (--attachment), each read from
the run's attachments/ in the bwrap kennel, and each one's first request to the
scripted model carries the picture."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from neonize.proto.waE2E.WAWebProtobufsE2E_pb2 import ImageMessage

from channels.whatsapp import _neonize as nz
from orchestrator.config import Settings
from tests.channels.whatsapp.builders import OWNER, jid, message_event
from tests.channels.whatsapp.fake_client import FakeWhatsAppClient
from tests.channels.whatsapp.whole_app import OWNER_DIRECT, start_app, wait_for
from tests.fakes.model_server import ScriptedModelServer, Text
from tests.fakes.require import require_binary
from tests.hearing.test_attachments_claude import png

pytestmark = pytest.mark.real
DIALECT = {"codex": "openai_responses", "copilot": "openai_chat"}


@pytest.mark.parametrize("cli", ["codex", "copilot"])
async def test_the_cli_sends_the_screenshot_with_its_first_request(
    cli: str,
    make_settings: Callable[..., Settings],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    require_binary(cli)
    unpacked = Path.home() / ".cache" / "copilot"
    if cli == "copilot" and (unpacked / "pkg").is_dir():
        monkeypatch.setenv("COPILOT_PKG_CACHE_HOME", str(unpacked))  # as the e2e tests do
    shot = png(8, 6)
    async with ScriptedModelServer() as model:
        model.script(Text("The screenshot shows nothing to change."))
        settings = make_settings(
            **OWNER_DIRECT,
            FETCH_HARNESS=cli,
            FETCH__PROVIDERS__OPENAI__BASE_URL=model.url + "/v1",
            OPENAI_API_KEY="sk-canary-real-key-91c2",
        )
        client = FakeWhatsAppClient(media=shot)
        app = await start_app(settings, client)
        try:
            image = nz.Message(
                imageMessage=ImageMessage(
                    mimetype="image/png",
                    caption="fix the typo in README.md of demo, see the screenshot",
                    fileLength=len(shot),
                    height=6,
                    width=8,
                    directPath="/v/t62.7118-24/shot",
                    mediaKey=b"k" * 32,
                    fileSHA256=b"s" * 32,
                    fileEncSHA256=b"e" * 32,
                )
            )
            client.emit(message_event(image, id="3EB0CLI001", chat=jid(OWNER), sender=jid(OWNER)))
            await wait_for(client, "finished without changing any file", timeout=120)
        finally:
            await app.__aexit__(None, None, None)
        first = next(r for r in model.requests if r.dialect == DIALECT[cli] and r.body)
        wire = json.dumps(first.body)
        assert "data:image/png;base64," in wire, wire[:2000]
        assert "/fetch/attachments/3EB0CLI001.png" in wire  # the prompt names it too
