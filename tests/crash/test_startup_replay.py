"""Start-up replay handles each message once (issue 12).

A channel that delivers as soon as it starts (WhatsApp's offline backlog does exactly
that) and rows a killed run left ``queued`` in the inbox: every message is handled
exactly once — one reminder, one memory, one model call each — never twice."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

from channels.base import InboundSink
from channels.terminal import TerminalChannel
from core.events import Inbound
from core.tasks import Spawner
from orchestrator.app import build_app
from orchestrator.config import Settings
from orchestrator.gateway import to_payload
from orchestrator.store import Store
from tests.fakes.model_server import ScriptedModelServer, Text

LEFT = (
    "/remember left-over fact one",
    "/remind left-over call in 3 hours",
    "what is a left-over monad?",
)
LIVE = ("/remember live fact two", "/remind live call in 4 hours", "what is a live functor?")


class EagerTerminal(TerminalChannel):
    """Delivers its backlog inside ``start``: while Fetch is still starting up."""

    def __init__(self, backlog: tuple[str, ...]) -> None:
        super().__init__("owner")
        self._backlog = backlog

    async def start(self, sink: InboundSink, spawner: Spawner) -> None:
        await super().start(sink, spawner)
        for i, text in enumerate(self._backlog):
            await self.submit(text, message_id=f"live-{i}")


def _last_user(body: dict[str, Any] | None) -> str:
    """The newest question in a model call (a context note may follow it)."""
    said = [
        str(m.get("content"))
        for m in (body or {}).get("messages", [])
        if m.get("role") == "user" and str(m.get("content")).startswith("what is")
    ]
    return said[-1] if said else ""


def _owner(text: str, message_id: str) -> Inbound:
    return Inbound(
        channel="terminal",
        chat="owner",
        sender="owner",
        message_id=message_id,
        text=text,
        from_owner=True,
    )


async def test_messages_during_start_up_and_left_queued_are_each_handled_once(
    tmp_path: Path,
    make_settings: Callable[..., Settings],
) -> None:
    async with ScriptedModelServer(default=Text("an answer")) as model:
        settings = make_settings(
            FETCH_MODEL_BASE_URL=model.url + "/v1",
            FETCH_MODEL="planner-1",
            FETCH_MODEL_API_KEY="sk-x",
            FETCH__MODEL__MAX_RETRIES="0",
        )
        # A killed run accepted these and never handled them.
        settings.home_dir.mkdir(parents=True, exist_ok=True)
        async with Store(settings.db_path) as store:
            for i, text in enumerate(LEFT):
                inbound = _owner(text, f"left-{i}")
                assert await store.inbox.accept(
                    "terminal", inbound.message_id, inbound.key, to_payload(inbound)
                )
        terminal = EagerTerminal(LIVE)
        app = build_app(settings, channels=[terminal])
        async with app:
            await asyncio.wait_for(app.drain(), 30)
            await asyncio.sleep(0.3)  # anything doubled would have been queued by now
            await asyncio.wait_for(app.drain(), 30)
        replies = []
        while not terminal.outbox.empty():
            replies.append(terminal.outbox.get_nowait().text)
        # The last message of each model call is what it answers: one call per question.
        asked = [_last_user(r.body) for r in model.model_requests]
        assert sorted(a for a in asked if "monad" in a or "functor" in a) == [
            "what is a left-over monad?",
            "what is a live functor?",
        ], asked
    db = sqlite3.connect(settings.db_path)
    try:
        reminders = [r[0] for r in db.execute("SELECT text FROM jobs")]
        statuses = [r[0] for r in db.execute("SELECT status FROM inbound")]
    finally:
        db.close()
    assert sorted(reminders) == ["left-over call", "live call"], reminders
    assert statuses == ["done"] * 6
    mem = sqlite3.connect(settings.home_dir / "memory" / "memory.db")
    try:
        memories = sorted(
            r[0] for r in mem.execute("SELECT content FROM memory_items WHERE kind != 'archive'")
        )
    finally:
        mem.close()
    assert memories == ["left-over fact one", "live fact two"], memories
    remembered = [r for r in replies if "Remembered" in r]
    assert len(remembered) == 2, replies
