"""A message sent while a task runs is never dropped (issue 22): when the CLI reads no
input while it runs (Gemini CLI; Claude Code is steered instead: tests/e2e/test_steering.py)
it is kept (still ``queued`` in SQLite, so a restart would replay it) and answered after
the task, in the order it came, once the chat is idle again (here: after the diff is
answered). A real CLI (a stand-in ``gemini`` that works for ~3 s) in the real kennel."""

from __future__ import annotations

import asyncio
import os
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

from orchestrator.config import Settings
from tests.conftest import start_driver

SLOW = (
    "#!/bin/sh\nsed -i 's/Teh/The/' README.md\n"
    "i=0; while [ $i -lt 30 ]; do sleep 0.1; i=$((i+1)); done\n"
    'echo \'{"type":"init","session_id":"g-1"}\'\n'
    'echo \'{"type":"message","role":"assistant","content":"fixed it"}\'\n'
    'echo \'{"type":"result","status":"success"}\'\n'
)


def _statuses(db: Path) -> dict[str, str]:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return {str(m): str(s) for m, s in conn.execute("SELECT message_id, status FROM inbound")}
    finally:
        conn.close()


async def test_messages_during_a_task_are_answered_after_it_in_order(
    make_settings: Callable[..., Settings],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    cli = bin_dir / "gemini"
    cli.write_text(SLOW)
    cli.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    settings = make_settings(FETCH_HARNESS="gemini-cli", GEMINI_API_KEY="sk-x")
    app, fetch = await start_driver(settings)
    try:
        await fetch.ask("fix the typo in README.md of demo", "On it")
        await fetch.push("thanks", message_id="during-1")
        said = await fetch.expect("📥 queued: gemini-cli can't take input mid-run")
        assert "I'll pass it on after the task" in " ".join(said.split())
        await fetch.push("bye", message_id="during-2")
        await fetch.expect("📥 queued: gemini-cli can't take input mid-run")
        # A command that cannot run during a task is kept the same way.
        await fetch.push("/workspace demo", message_id="during-3")
        assert "I'll run it then" in await fetch.expect("/workspace waits")
        statuses = _statuses(settings.db_path)
        assert {statuses[f"during-{n}"] for n in (1, 2, 3)} == {"queued"}
        await fetch.expect("Apply?", 30)
        # The diff waits for yes/no: the kept messages are not taken for an answer.
        assert await fetch.quiet(0.5) == []
        await fetch.ask("no", "Discarded")
        after = [await fetch.pop(10), await fetch.pop(10), await fetch.pop(10)]
        assert after[:2] == ["🐕 Any time.", "🐕 Bye! I'll be here."]
        assert after[2].startswith("📂 Now working in demo"), after
        await asyncio.wait_for(app.drain(), 10)
        statuses = _statuses(settings.db_path)
        assert {statuses[f"during-{n}"] for n in (1, 2, 3)} == {"done"}
    finally:
        await app.__aexit__(None, None, None)
