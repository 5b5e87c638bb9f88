"""The first message after a restart finds its way ready (issue 26.2).

What the first message used to pay for is done as Fetch begins to serve
(``orchestrator/ahead.py``): the owner's chat is live before anyone writes, the store's
WAL has been started again (the fsync of its header), start-up's objects are out of the
collector's reach. Real parts: a real SQLite home used by two processes' worth of apps in
turn, the real HTTP listener, a scripted model server over real HTTP."""

from __future__ import annotations

import asyncio
import gc
import sqlite3
from collections.abc import Callable
from pathlib import Path

from channels.terminal import TerminalChannel
from core.events import SessionKey
from orchestrator.app import build_app
from orchestrator.config import Settings
from tests.fakes.model_server import ScriptedModelServer, Text


async def _until(check: Callable[[], bool], seconds: float = 10.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + seconds
    while not check():
        assert loop.time() < deadline, "not ready in time"
        await asyncio.sleep(0.01)


def _wal(settings: Settings) -> Path:
    return settings.db_path.with_name(settings.db_path.name + "-wal")


async def test_after_a_restart_the_owners_chat_and_the_store_are_ready_before_a_message(
    make_settings: Callable[..., Settings],
) -> None:
    async with ScriptedModelServer(default=Text("hello there")) as model:
        settings = make_settings(
            FETCH_MODEL_BASE_URL=model.url + "/v1",
            FETCH_MODEL="planner-1",
            FETCH_MODEL_API_KEY="sk-x",
            FETCH__MODEL__MAX_RETRIES="0",
        )
        owner = SessionKey("terminal", settings.terminal.chat)
        stranger_chat = SessionKey("terminal", "never-wrote")

        # A brand-new home: nothing to load ahead, and nothing is created for it.
        terminal = TerminalChannel(settings.terminal.chat)
        async with build_app(settings, terminal=terminal) as app:
            assert app.services is not None
            await asyncio.sleep(0.2)  # the owned preload task has run by now
            assert owner not in {s.key for s in app.services.sessions.live()}
            db = sqlite3.connect(settings.db_path)
            try:
                assert db.execute("SELECT count(*) FROM sessions").fetchone() == (0,)
            finally:
                db.close()
            await terminal.submit("say hello")
            reply = await asyncio.wait_for(terminal.outbox.get(), 30)
            assert "hello there" in reply.text
        # The last connection to close checkpoints the WAL and removes it.
        assert not _wal(settings).exists() or _wal(settings).stat().st_size == 0

        # The restart: before any message, the owner's chat is live (as it was left)
        # and the WAL holds a frame already, so the first message's write does not
        # start it again.
        terminal = TerminalChannel(settings.terminal.chat)
        app = build_app(settings, terminal=terminal)
        async with app:
            assert app.services is not None
            sessions = app.services.sessions
            await _until(lambda: owner in {s.key for s in sessions.live()})
            assert stranger_chat not in {s.key for s in sessions.live()}
            assert _wal(settings).stat().st_size > 0
            assert gc.get_freeze_count() > 0  # start-up's objects left the collector
            before = len(model.model_requests)
            await terminal.submit("say hello again")
            reply = await asyncio.wait_for(terminal.outbox.get(), 30)
            assert "hello there" in reply.text
            # The preloaded session is the one the message used: its history holds
            # both conversations' turns.
            asked = model.model_requests[before].body or {}
            said = [m.get("content") for m in asked.get("messages", [])]
            assert "say hello" in said and "say hello again" in said, said
