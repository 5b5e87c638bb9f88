"""Screenshots reach a task under the Docker kennel (issue 23, 2): a WhatsApp image (a
real neonize image message with its caption) is copied into the run's attachments/
beside its tree (inside the runs folder the container binds, never in the repository),
named in the prompt where the container shows it, and the real Claude Code in the real
kennel image reads it: its next request to the scripted model carries the image."""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from neonize.proto.waE2E.WAWebProtobufsE2E_pb2 import ImageMessage

from channels.whatsapp import _neonize as nz
from orchestrator.config import Settings
from tests.channels.whatsapp.builders import OWNER, jid, message_event
from tests.channels.whatsapp.fake_client import FakeWhatsAppClient
from tests.channels.whatsapp.whole_app import OWNER_DIRECT, start_app, wait_for
from tests.conftest import git
from tests.docker.conftest import CANARY, docker_client, kennel_image  # noqa: F401 (fixtures)
from tests.fakes.model_server import Delay, EditFile, ScriptedModelServer, Text, ToolCall
from tests.hearing.test_attachments_claude import images_in, png

NAME = "3EB0SHOT02.png"


async def _attached(home: Path, timeout: float = 120) -> Path:
    """The run's copy of the screenshot on the host, once the runner made it."""
    async with asyncio.timeout(timeout):
        while True:
            found = list((home / "runs").glob(f"*/*/attachments/{NAME}"))
            if found:
                return found[0]
            await asyncio.sleep(0.02)


async def test_claude_in_docker_reads_the_screenshot_sent_with_the_task(
    kennel_image: str,  # noqa: F811 (the fixture)
    make_settings: Callable[..., Settings],
) -> None:
    async with ScriptedModelServer() as model:
        await _screenshot_in_docker(model, make_settings)


async def _screenshot_in_docker(
    model: ScriptedModelServer, make_settings: Callable[..., Settings]
) -> None:
    shot = png()
    settings = make_settings(
        **OWNER_DIRECT,
        FETCH_KENNEL="docker",
        FETCH_HARNESS="claude-code",
        ANTHROPIC_BASE_URL=model.url,
        ANTHROPIC_API_KEY=CANARY,
    )
    client = FakeWhatsAppClient(media=shot)
    app = await start_app(settings, client)
    try:
        assert app.services is not None
        repo = app.services.workspace.path("demo")
        # The run's folder has a random name: the Read's path is filled in once the
        # runner has copied the file (before the CLI starts; the delay is a margin).
        read: dict[str, Any] = {}
        model.script(
            Delay(1.0, ToolCall("Read", read)),
            EditFile("README.md", "Teh quick", "The quick"),
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
        client.emit(message_event(image, id=NAME.split(".")[0], chat=jid(OWNER), sender=jid(OWNER)))
        host = await _attached(settings.home_dir)
        seen = f"/runs/{host.parent.parent.name}/attachments/{NAME}"
        read["file_path"] = seen
        _, diff = await wait_for(client, "Apply? (yes/no)", timeout=180)
        assert "+The quick" in diff
        turns = [r.body for r in model.requests if r.dialect == "anthropic" and r.body]
        # The prompt names the file where the container shows it.
        assert f"{seen} (an image" in json.dumps(turns[0])
        carried = [img for body in turns for img in images_in(body)]
        assert carried, "no request to the model carried the image"
        source = carried[0]["source"]
        assert isinstance(source, dict) and source.get("type") == "base64"
        assert base64.b64decode(str(source["data"])) == shot
        # Never part of the change: the repository has no attachment in it.
        assert "attachments" not in diff and NAME not in diff
        assert git(repo, "status", "--porcelain") == ""
    finally:
        await app.__aexit__(None, None, None)
