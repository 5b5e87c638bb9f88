"""A question a CLI asks mid-task (a real process in the bwrap sandbox, Claude Code's
stream format) reaches the owner as a WAITING question; the answer resumes the same CLI
session, and the task goes on to its diff. /stop while it waits ends the task."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from orchestrator.config import Settings
from tests.conftest import Driver, git, start_driver, tree_snapshot

# First turn: asks. A turn that resumes session s-42 uses the answer: the prompt, which
# Claude Code reads as the first stream-json line on stdin (steering, orchestrator/task/
# steer.py), echoed back as taken like --replay-user-messages does.
ASKING = """#!/bin/sh
read -r line
word=$(printf '%s' "$line" | sed 's/.*"text": "\\([^"]*\\)".*/\\1/')
echo '{"type":"system","subtype":"init","session_id":"s-42"}'
printf '%s\\n' "$line" | sed 's/}$/, "isReplay": true}/'
case " $* " in
  *" --resume s-42 "*)
    sed -i "s/Teh/$word/" README.md
    echo '{"type":"result","subtype":"success","result":"Used your word.","session_id":"s-42"}'
    ;;
  *)
    q='Which word should replace Teh: The or A?'
    echo '{"type":"result","subtype":"success","result":"'"$q"'","session_id":"s-42"}'
    ;;
esac
"""


async def started(
    make_settings: Callable[..., Settings], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> tuple[object, Driver]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    cli = bin_dir / "claude"
    cli.write_text(ASKING)
    cli.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    return await start_driver(make_settings(FETCH_HARNESS="claude-code", ANTHROPIC_API_KEY="sk-x"))


async def test_the_answer_goes_back_to_the_cli(
    make_settings: Callable[..., Settings],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    app, fetch = await started(make_settings, tmp_path, monkeypatch)
    try:
        repo = fetch.services.workspace.path("demo")
        base = git(repo, "rev-parse", "HEAD")
        asked = await fetch.ask("fix the typo in README.md of demo", "asks", 60)
        assert "Which word should replace Teh: The or A?" in asked
        session = await fetch.services.sessions.get(fetch.terminal_key())
        assert session.state == "WAITING"
        assert "claude-code asks" in await fetch.ask("/status", "Fetch ·")
        await fetch.ask("The", "Passed your answer")
        card = await fetch.expect("Apply?", 60)
        assert "+The quick" in card and "Used your word." in card
        await fetch.ask("yes", "Committed")
        assert git(repo, "rev-parse", "HEAD^") == base
        task = await fetch.services.store.work.get_task(1)
        assert task is not None and task.status == "committed"
    finally:
        await app.__aexit__(None, None, None)  # type: ignore[attr-defined]


async def test_stop_while_the_question_waits_ends_the_task(
    make_settings: Callable[..., Settings],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    app, fetch = await started(make_settings, tmp_path, monkeypatch)
    try:
        repo = fetch.services.workspace.path("demo")
        before = tree_snapshot(repo)
        await fetch.ask("fix the typo in README.md of demo", "asks", 60)
        stopped = await fetch.ask("/stop", "Stopped task #1")
        assert "No changes were kept" in " ".join(stopped.split())
        assert tree_snapshot(repo) == before
        assert "ALERT" in await fetch.ask("/status", "Fetch ·")
        task = await fetch.services.store.work.get_task(1)
        assert task is not None and task.status == "stopped"
    finally:
        await app.__aexit__(None, None, None)  # type: ignore[attr-defined]


async def test_the_models_task_respond_tool_answers_the_cli(
    make_settings: Callable[..., Settings],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """task_respond (the orchestrator model's tool) does what the owner's reply does: the
    answer resumes the same CLI session and the task goes on to its diff."""
    from core.events import Inbound
    from orchestrator.context import Context

    app, fetch = await started(make_settings, tmp_path, monkeypatch)
    try:
        await fetch.ask("fix the typo in README.md of demo", "asks", 60)
        session = await fetch.services.sessions.get(fetch.terminal_key())
        assert session.state == "WAITING"
        tool = fetch.services.planner.executor.tools.get("task_respond")
        assert tool is not None
        key = fetch.terminal_key()
        ctx = Context(
            inbound=Inbound(
                channel=key.channel,
                chat=key.chat,
                sender=key.chat,
                message_id="m-respond",
                text="answer it",
                from_owner=True,
            ),
            session=session,
            services=fetch.services,
            text="answer it",
        )
        empty = await tool.handler(ctx, {"answer": ""})
        assert empty.content.startswith("error: no running task is waiting")
        assert session.state == "WAITING"
        async with session.lock:
            result = await tool.handler(ctx, {"answer": "The"})
        assert result.content.startswith("answered")
        card = await fetch.expect("Apply?", 60)
        assert "+The quick" in card and "Used your word." in card
        again = await tool.handler(ctx, {"answer": "A"})
        assert again.content.startswith("error: no running task is waiting")
    finally:
        await app.__aexit__(None, None, None)  # type: ignore[attr-defined]


async def test_stop_while_the_answer_is_passed_on_ends_the_task(
    make_settings: Callable[..., Settings],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A /stop that arrives while "Passed your answer" is on its way (a slow network)
    ends the task there: its CLI is not resumed, the layer its question kept goes, and
    the owner's tree is as it was."""
    app, fetch = await started(make_settings, tmp_path, monkeypatch)
    try:
        repo = fetch.services.workspace.path("demo")
        before = tree_snapshot(repo)
        await fetch.ask("fix the typo in README.md of demo", "asks", 60)
        home = fetch.services.settings.home_dir
        layers = [p for p in (home / "runs").glob("demo-*/*") if p.is_dir()]
        assert len(layers) == 1, layers  # the question keeps the run's layer
        sending = fetch.slow_send(monkeypatch, "Passed your answer")
        await fetch.push("The")
        await asyncio.wait_for(sending.wait(), 30)
        stopped = await fetch.ask("/stop", "Stopped task #1")
        assert "No changes were kept" in " ".join(stopped.split())
        await fetch.expect("Passed your answer", 10)
        assert not any("Apply?" in t for t in await fetch.quiet(1.5))
        task = await fetch.services.store.work.get_task(1)
        assert task is not None and task.status == "stopped", task
        assert not layers[0].exists()
        assert fetch.services.runner._runs == {}
        assert tree_snapshot(repo) == before
        assert "ALERT" in await fetch.ask("/status", "Fetch ·")
    finally:
        await app.__aexit__(None, None, None)  # type: ignore[attr-defined]
