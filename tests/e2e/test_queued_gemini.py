"""A message sent while the real Gemini CLI works is queued, never dropped (issue 23, 4):
``gemini -p`` reads no input once it runs, so the owner is told "📥 queued: gemini-cli
can't take input mid-run; I'll pass it on after the task", the messages stay ``queued`` in
SQLite (a restart replays them), never reach the CLI, and are answered after the task, in
the order they came, once its diff is answered. (Codex is steered now:
tests/harnesses/test_codex_steer.py.)"""

from __future__ import annotations

import asyncio
import json
import sqlite3
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from orchestrator.config import Settings
from tests.conftest import Driver, start_driver
from tests.fakes.model_server import Delay, EditFile, ScriptedModelServer, Text
from tests.fakes.require import require_binary

pytestmark = pytest.mark.real


def _statuses(db: Path) -> dict[str, str]:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return {str(m): str(s) for m, s in conn.execute("SELECT message_id, status FROM inbound")}
    finally:
        conn.close()


@pytest.fixture
async def model() -> AsyncIterator[ScriptedModelServer]:
    async with ScriptedModelServer() as srv:
        yield srv


@pytest.fixture
async def gemini(
    model: ScriptedModelServer, make_settings: Callable[..., Settings]
) -> AsyncIterator[tuple[Driver, Settings]]:
    require_binary("gemini")
    settings = make_settings(
        FETCH_HARNESS="gemini-cli",
        FETCH__PROVIDERS__GEMINI__BASE_URL=model.url,
        GEMINI_API_KEY="sk-canary-queued-7f1",
    )
    app, driver = await start_driver(settings)
    try:
        yield driver, settings
    finally:
        await app.__aexit__(None, None, None)


async def test_messages_to_gemini_mid_run_are_queued_and_answered_after_in_order(
    gemini: tuple[Driver, Settings], model: ScriptedModelServer
) -> None:
    fetch, settings = gemini
    # The first answer is held while the owner writes: the CLI is mid-run.
    model.script(
        Delay(4.0, EditFile("README.md", "Teh quick brown fox.", "The quick brown fox.")),
        Text("Fixed the typo in README.md."),
    )
    await fetch.ask("fix the typo in README.md of demo", "On it")
    await model.wait_for_requests(1, timeout=90)
    await fetch.push("thanks", message_id="during-1")
    said = await fetch.expect("📥 queued: gemini-cli can't take input mid-run", 20)
    said = " ".join(said.split())
    assert "I'll pass it on after the task" in said and "task #1" in said
    await fetch.push("bye", message_id="during-2")
    await fetch.expect("📥 queued: gemini-cli can't take input mid-run", 20)
    assert {_statuses(settings.db_path)[f"during-{n}"] for n in (1, 2)} == {"queued"}
    card = await fetch.expect("Apply?", 90)
    assert "+The quick" in card
    assert await fetch.quiet(0.5) == []  # never taken for the diff's answer
    await fetch.ask("no", "Discarded")
    assert [await fetch.pop(10), await fetch.pop(10)] == ["🐕 Any time.", "🐕 Bye! I'll be here."]
    await asyncio.wait_for(_kept_closed(fetch), 10)
    assert {_statuses(settings.db_path)[f"during-{n}"] for n in (1, 2)} == {"done"}
    # The CLI never saw them: only the task's own words reached the model.
    assert not [r for r in model.model_requests if "thanks" in json.dumps(r.body)]


async def _kept_closed(fetch: Driver) -> None:
    """Until both kept messages are closed (their handlers have replied already)."""
    while True:
        statuses = _statuses(fetch.services.settings.db_path)
        if all(statuses.get(f"during-{n}") == "done" for n in (1, 2)):
            return
        await asyncio.sleep(0.05)
