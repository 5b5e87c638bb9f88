"""Screenshots reach a task (issue 23, 2): a WhatsApp image (a real neonize image message
with its caption) is copied into the run's attachments/ beside its tree (never into the
repository), shown read-only in the bwrap kennel, named in the prompt, and the real
Claude Code reads it: its next request to the scripted model carries the image."""

from __future__ import annotations

import base64
import json
import struct
import zlib
from collections.abc import Callable

import pytest
from neonize.proto.waE2E.WAWebProtobufsE2E_pb2 import ImageMessage

from channels.whatsapp import _neonize as nz
from orchestrator.config import Settings
from tests.channels.whatsapp.builders import OWNER, jid, message_event
from tests.channels.whatsapp.fake_client import FakeWhatsAppClient
from tests.channels.whatsapp.whole_app import OWNER_DIRECT, start_app, wait_for
from tests.conftest import git
from tests.fakes.model_server import EditFile, ScriptedModelServer, Text, ToolCall
from tests.fakes.require import require_binary

pytestmark = pytest.mark.real
SEEN = "/fetch/attachments"  # where the bwrap kennel shows them


def png(width: int = 4, height: int = 3) -> bytes:
    """A real PNG (red pixels): Claude Code decodes what it reads."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    rows = b"".join(b"\x00" + b"\xff\x00\x00" * width for _ in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(rows))
        + chunk(b"IEND", b"")
    )


def images_in(body: dict[str, object]) -> list[dict[str, object]]:
    """Every image block of an Anthropic request, tool results included."""
    found: list[dict[str, object]] = []

    def walk(node: object) -> None:
        if isinstance(node, dict):
            if node.get("type") == "image":
                found.append(node)
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(body.get("messages"))
    return found


async def test_claude_code_reads_the_screenshot_sent_with_the_task(
    make_settings: Callable[..., Settings],
) -> None:
    require_binary("claude")
    shot = png()
    async with ScriptedModelServer() as model:
        settings = make_settings(
            **OWNER_DIRECT,
            FETCH_HARNESS="claude-code",
            ANTHROPIC_BASE_URL=model.url,
            ANTHROPIC_API_KEY="sk-ant-real-key-for-relay",
        )
        client = FakeWhatsAppClient(media=shot)
        app = await start_app(settings, client)
        try:
            assert app.services is not None
            repo = app.services.workspace.path("demo")
            model.script(
                ToolCall("Read", {"file_path": f"{SEEN}/3EB0SHOT01.png"}),
                EditFile(str(repo / "README.md"), "Teh quick", "The quick"),
                Text("Fixed the typo shown in the screenshot."),
            )
            image = nz.Message(
                imageMessage=ImageMessage(
                    mimetype="image/png",
                    caption="fix the typo in README.md of demo, see the screenshot",
                    fileLength=len(shot),
                    height=3,
                    width=4,
                    directPath="/v/t62.7118-24/shot",
                    mediaKey=b"k" * 32,
                    fileSHA256=b"s" * 32,
                    fileEncSHA256=b"e" * 32,
                )
            )
            client.emit(message_event(image, id="3EB0SHOT01", chat=jid(OWNER), sender=jid(OWNER)))
            _, diff = await wait_for(client, "Apply? (yes/no)", timeout=120)
            assert "+The quick" in diff
            turns = [r.body for r in model.requests if r.dialect == "anthropic" and r.body]
            # The prompt names the file where the kennel shows it.
            assert f"{SEEN}/3EB0SHOT01.png (an image" in json.dumps(turns[0])
            carried = [img for body in turns for img in images_in(body)]
            assert carried, "no request to the model carried the image"
            source = carried[0]["source"]
            assert isinstance(source, dict) and source.get("type") == "base64"
            assert base64.b64decode(str(source["data"]))[:8] == b"\x89PNG\r\n\x1a\n"
            # Never part of the change: the repository has no attachment in it.
            assert "attachments" not in diff and "3EB0SHOT01" not in diff
            assert git(repo, "status", "--porcelain") == ""
        finally:
            await app.__aexit__(None, None, None)
