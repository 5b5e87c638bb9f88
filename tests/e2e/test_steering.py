"""Steering a running task (issue 23): a message sent while the real Claude Code runs in
the bwrap kennel is written to its stdin (streaming JSON input), reaches the scripted
model's next request, and the owner is told "📨 passed to claude-code"; one that comes
after the CLI's last request starts a turn of its own, whose answer ends the task.
/pause keeps a message for after the task ("📥"), and /stop still ends the run."""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from orchestrator.config import Settings
from tests.conftest import Driver, start_driver
from tests.fakes.model_server import Delay, EditFile, Hang, ScriptedModelServer, Text
from tests.fakes.require import require_binary

pytestmark = pytest.mark.real
STEER = "also: use British spelling"


@pytest.fixture
async def model() -> AsyncIterator[ScriptedModelServer]:
    async with ScriptedModelServer() as srv:
        yield srv


@pytest.fixture
async def claude(
    model: ScriptedModelServer, make_settings: Callable[..., Settings]
) -> AsyncIterator[tuple[Driver, Settings]]:
    require_binary("claude")
    settings = make_settings(
        FETCH_HARNESS="claude-code", ANTHROPIC_BASE_URL=model.url, ANTHROPIC_API_KEY="sk-ant-x"
    )
    app, driver = await start_driver(settings)
    try:
        yield driver, settings
    finally:
        await app.__aexit__(None, None, None)


def _carrying(model: ScriptedModelServer, text: str) -> list[int]:
    """Indices of the model requests whose body carries ``text``."""
    return [i for i, r in enumerate(model.model_requests) if text in json.dumps(r.body)]


def _status(db: Path, message_id: str) -> str:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        row = conn.execute("SELECT status FROM inbound WHERE message_id = ?", (message_id,))
        return str(row.fetchone()[0])
    finally:
        conn.close()


def _row(db: Path, sql: str) -> tuple[object, ...]:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return tuple(conn.execute(sql).fetchone())
    finally:
        conn.close()


async def _wait(predicate: Callable[[], bool], timeout: float) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not predicate():
        assert loop.time() < deadline, "timed out"
        await asyncio.sleep(0.05)


async def test_a_message_mid_run_reaches_the_cli_s_next_request(
    claude: tuple[Driver, Settings], model: ScriptedModelServer
) -> None:
    fetch, settings = claude
    repo = fetch.services.workspace.path("demo")
    # The first answer is slow: the message is written while the CLI waits for it.
    model.script(
        Delay(2.5, EditFile(str(repo / "README.md"), "Teh quick", "The quick")),
        Text("Fixed, and noted the spelling."),
    )
    await fetch.ask("fix the typo in README.md of demo", "On it")
    await model.wait_for_requests(1, timeout=30)
    await fetch.push(STEER, message_id="steer-1")
    assert "(task #" in await fetch.expect("📨 passed to claude-code")
    card = await fetch.expect("Apply?", 60)
    assert "+The quick" in card and "noted the spelling" in card
    carried = _carrying(model, STEER)
    assert carried and carried[0] > 0  # a later request than the first: mid-run
    assert len(model.model_requests) == 3  # no extra turn: taken within the task's turn
    assert _status(settings.db_path, "steer-1") == "done"  # answered, not kept
    await fetch.ask("no", "Discarded")
    assert not [m for m in await fetch.quiet(0.5) if "📭" in m or "📥" in m]


async def test_a_message_after_the_last_request_gets_a_turn_of_its_own(
    claude: tuple[Driver, Settings], model: ScriptedModelServer
) -> None:
    fetch, settings = claude
    repo = fetch.services.workspace.path("demo")
    model.script(
        EditFile(str(repo / "README.md"), "Teh quick", "The quick"),  # Read, then Edit
        Delay(2.5, Text("Fixed the typo.")),  # the turn's last request
        Text("Switched to British spelling."),  # the message's own turn
    )
    await fetch.ask("fix the typo in README.md of demo", "On it")
    await model.wait_for_requests(3, timeout=30)  # Read, Edit, the last text
    await fetch.push(STEER)
    await fetch.expect("📨 passed to claude-code")
    card = await fetch.expect("Apply?", 60)
    # The task ends with the answer to the message, in the CLI's same session.
    assert "Switched to British spelling." in card
    assert _carrying(model, STEER) == [3]
    assert not model.pending
    # Both turns count: the task's tokens are what the relay saw of all four calls.
    text = (settings.home_dir / "relay.jsonl").read_text(encoding="utf-8")
    calls = [json.loads(line) for line in text.splitlines() if line.strip()]
    seen = sum(int(c.get("tokens_in") or 0) for c in calls if c.get("task") == 1)
    row = _row(settings.db_path, "SELECT tokens_in FROM tasks WHERE id = 1")
    assert seen > 0 and row == (seen,)


async def test_paused_keeps_the_message_and_stop_still_ends_the_run(
    claude: tuple[Driver, Settings], model: ScriptedModelServer
) -> None:
    fetch, settings = claude
    model.script(Hang(60))
    await fetch.ask("fix the typo in README.md of demo", "On it")
    await model.wait_for_requests(1, timeout=30)
    await fetch.ask("/pause", "Paused")
    await fetch.push(STEER, message_id="steer-paused")
    assert "paused" in await fetch.expect("take this up once it is done")
    assert _status(settings.db_path, "steer-paused") == "queued"  # kept, not passed
    await fetch.ask("/resume", "Resumed")
    await fetch.push("and keep it short", message_id="steer-running")
    await fetch.expect("📨 passed to claude-code")
    await fetch.ask("/stop", "Stopped")
    # The kept message is taken up once the chat is idle again.
    await _wait(lambda: _status(settings.db_path, "steer-paused") == "done", 15)
    assert _carrying(model, STEER) == []


async def test_a_message_the_cli_never_took_is_said_back(
    make_settings: Callable[..., Settings], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A CLI that ends without reading what was written to it (a stand-in that reads no
    stdin): the owner is told which message it never read, so nothing is lost unsaid."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "claude").write_text(
        "#!/bin/sh\nsed -i 's/Teh/The/' README.md\nsleep 2\n"
        'echo \'{"type":"result","subtype":"success","result":"fixed it"}\'\n'
    )
    (bin_dir / "claude").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    app, fetch = await start_driver(
        make_settings(FETCH_HARNESS="claude-code", ANTHROPIC_API_KEY="sk-x")
    )
    try:
        await fetch.ask("fix the typo in README.md of demo", "On it")
        await fetch.push(STEER)
        await fetch.expect("📨 passed to claude-code")
        missed = await fetch.expect("ended before reading", 30)
        assert STEER in missed and "Send it again" in missed
        await fetch.expect("Apply?", 30)
    finally:
        await app.__aexit__(None, None, None)
