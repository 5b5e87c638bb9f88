"""A file sent before the task that uses it, or while another task runs, reaches that
task (issue 23, 2): a WhatsApp screenshot with no words, then "fix the typo ..." as a
message of its own; and a screenshot sent while a task works, which goes with the next
one. The real Claude Code (bwrap kennel) reads each from the run's attachments/, the
card says it came along ("📎 with what you sent just before"), and a request to the
scripted model carries the image. Files are kept per chat on the host
(orchestrator/task/recent.py) and used once."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest
from neonize.proto.waE2E.WAWebProtobufsE2E_pb2 import ImageMessage

from channels.whatsapp import _neonize as nz
from orchestrator.config import Settings
from tests.channels.whatsapp.builders import OWNER, jid, message_event
from tests.channels.whatsapp.fake_client import FakeWhatsAppClient
from tests.channels.whatsapp.whole_app import OWNER_DIRECT, start_app, wait_for
from tests.fakes.model_server import Delay, EditFile, ScriptedModelServer, Text, ToolCall
from tests.fakes.require import require_binary
from tests.hearing.test_attachments_claude import SEEN, images_in, png

pytestmark = pytest.mark.real
TASK = "fix the typo in README.md of demo"


def image(shot: bytes, caption: str = "") -> nz.Message:
    return nz.Message(
        imageMessage=ImageMessage(
            mimetype="image/png",
            caption=caption,
            fileLength=len(shot),
            height=3,
            width=4,
            directPath="/v/t62.7118-24/shot",
            mediaKey=b"k" * 32,
            fileSHA256=b"s" * 32,
            fileEncSHA256=b"e" * 32,
        )
    )


def text(body: str) -> nz.Message:
    return nz.Message(conversation=body)


async def test_a_screenshot_then_fix_this_and_one_sent_mid_task(
    make_settings: Callable[..., Settings],
) -> None:
    require_binary("claude")
    shot = png()
    async with ScriptedModelServer() as model:
        settings = make_settings(
            **OWNER_DIRECT,
            FETCH__WHATSAPP__SENDS_PER_MINUTE="600",  # three tasks' cards and edits
            FETCH_HARNESS="claude-code",
            ANTHROPIC_BASE_URL=model.url,
            ANTHROPIC_API_KEY="sk-ant-real-key-for-relay",
        )
        client = FakeWhatsAppClient(media=shot)
        app = await start_app(settings, client)
        owner = jid(OWNER)

        def emit(message: nz.Message, id: str) -> None:
            client.emit(message_event(message, id=id, chat=owner, sender=owner))

        try:
            assert app.services is not None
            repo = app.services.workspace.path("demo")
            # 1. A screenshot with no words, answered; then the task as a message of its own.
            emit(image(shot), "3EB0BEFORE1")
            await wait_for(client, "", timeout=20)
            mark = len(client.calls)
            model.script(
                ToolCall("Read", {"file_path": f"{SEEN}/3EB0BEFORE1.png"}),
                EditFile(str(repo / "README.md"), "Teh quick", "The quick"),
                Text("Fixed the typo shown in the screenshot."),
            )
            first = len(model.requests)
            emit(text(TASK), "3EB0TASK1")
            _, card = await wait_for(client, "On it", mark, timeout=30)
            assert "📎 with what you sent just before: 3EB0BEFORE1.png" in card
            _, diff = await wait_for(client, "Apply? (yes/no)", mark, timeout=120)
            turns = [r.body for r in model.requests[first:] if r.dialect == "anthropic"]
            assert f"{SEEN}/3EB0BEFORE1.png (an image" in json.dumps(turns[0])
            assert [i for body in turns if body for i in images_in(body)]
            assert "3EB0BEFORE1" not in diff
            mark = len(client.calls)
            emit(text("no"), "3EB0NO1")
            await wait_for(client, "Discarded", mark, timeout=30)

            # 2. A screenshot sent while a task works goes with the next task.
            model.script(
                Delay(3.0, EditFile(str(repo / "README.md"), "Teh quick", "The quick")),
                Text("Fixed."),
            )
            mark = len(client.calls)
            emit(text(TASK), "3EB0TASK2")
            await wait_for(client, "On it", mark, timeout=30)
            await model.wait_for_requests(len(model.requests) + 1, timeout=60)
            emit(image(shot, "this one is the next thing"), "3EB0DURING")
            await wait_for(client, "📎 The file goes with your next task", mark, 30)
            # One with no words is kept for the next task too, and not passed on.
            emit(image(shot), "3EB0DURING2")
            _, got = await wait_for(client, "📎 Got it", mark, 30)
            assert "goes with your next task" in got
            _, diff = await wait_for(client, "Apply? (yes/no)", mark, timeout=120)
            mark = len(client.calls)
            emit(text("no"), "3EB0NO2")
            await wait_for(client, "Discarded", mark, timeout=30)
            model.script(
                ToolCall("Read", {"file_path": f"{SEEN}/3EB0DURING.png"}),
                EditFile(str(repo / "README.md"), "Teh quick", "The quick"),
                Text("Fixed the next thing."),
            )
            first = len(model.requests)
            mark = len(client.calls)
            emit(text(TASK), "3EB0TASK3")
            _, card = await wait_for(client, "On it", mark, timeout=30)
            flat = " ".join(card.split())  # the phone width wraps the line
            assert "📎 with what you sent just before: 3EB0DURING.png, 3EB0DURING2.png" in flat
            assert "3EB0BEFORE1" not in card  # used once, by the first task
            await wait_for(client, "Apply? (yes/no)", mark, timeout=120)
            turns = [r.body for r in model.requests[first:] if r.dialect == "anthropic"]
            assert f"{SEEN}/3EB0DURING.png (an image" in json.dumps(turns[0])
            assert f"{SEEN}/3EB0DURING2.png (an image" in json.dumps(turns[0])
            assert not [r for r in model.requests if "[image]" in json.dumps(r.body)]
            assert [i for body in turns if body for i in images_in(body)]
        finally:
            await app.__aexit__(None, None, None)
