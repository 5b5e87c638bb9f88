"""The loop with the real Claude Code CLI, headless, in the local kennel, reaching the
scripted Anthropic fake only through Fetch's model relay."""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from orchestrator.config import Settings
from tests.conftest import Driver, git, hang_a_task, start_driver, tree_snapshot, works_in
from tests.fakes.model_server import EditFile, Error, Garbage, ScriptedModelServer, Text
from tests.fakes.require import require_binary

pytestmark = pytest.mark.real
REAL_KEY = "sk-ant-canary-real-key-7f3a"


@pytest.fixture
async def model() -> AsyncIterator[ScriptedModelServer]:
    async with ScriptedModelServer() as srv:
        yield srv


@pytest.fixture
async def claude(
    model: ScriptedModelServer, make_settings: Callable[..., Settings]
) -> AsyncIterator[Driver]:
    require_binary("claude")
    settings = make_settings(
        FETCH_HARNESS="claude-code", ANTHROPIC_BASE_URL=model.url, ANTHROPIC_API_KEY=REAL_KEY
    )
    app, driver = await start_driver(settings)
    try:
        yield driver
    finally:
        await app.__aexit__(None, None, None)


def _claude_processes(repo: Path) -> list[int]:
    """Live ``claude`` processes this test's Fetch started (found by their working folder,
    this test's repo: the sandbox shows them no FETCH_HOME); another run has its own."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                cmd = Path(f"/proc/{entry}/cmdline").read_bytes()
                cwd = os.readlink(f"/proc/{entry}/cwd")
            except OSError:
                continue
            if b"claude" in cmd and b"stream-json" in cmd and works_in(repo, cwd):
                try:
                    state = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[0]
                except (OSError, IndexError):
                    continue
                if state != "Z":  # a zombie has ended; only its exit status is left
                    found.append(int(entry))
    return found


async def test_fix_typo_approve_commit_undo(claude: Driver, model: ScriptedModelServer) -> None:
    repo = claude.services.workspace.path("demo")
    original = git(repo, "rev-parse", "HEAD")
    before = tree_snapshot(repo)
    model.script(
        EditFile(str(repo / "README.md"), "Teh quick", "The quick"),
        Text("Fixed the typo in README.md."),
    )
    diff = await claude.ask("fix the typo in README.md of demo", "Apply? (yes/no)", 90)
    assert "README.md +1 −1" in diff and "+The quick" in diff
    assert "Fixed the typo" in diff  # what the CLI said, relayed
    done = await claude.ask("yes", "Committed")
    head = git(repo, "rev-parse", "HEAD")
    assert head[:7] in done and git(repo, "rev-parse", "HEAD^") == original
    assert (repo / "README.md").read_text().startswith("# demo\n\nThe quick")
    await claude.ask("/undo", "Reverted")
    assert tree_snapshot(repo) == before
    assert git(repo, "rev-parse", "HEAD^{tree}") == git(repo, "rev-parse", f"{original}^{{tree}}")

    # Every model call went through the relay: the fake saw the real key, injected there.
    calls = [r for r in model.requests if r.dialect == "anthropic"]
    assert calls and all(r.headers.get("x-api-key") == REAL_KEY for r in calls)
    log = claude.services.settings.home_dir / "relay.jsonl"
    entries = [json.loads(line) for line in log.read_text().splitlines()]
    assert entries and all(e["harness"] == "claude-code" for e in entries)
    turns = [e for e in entries if e["path"] == "/v1/messages"]
    assert len(turns) >= 2 and {e["status"] for e in turns} == {200}
    assert sum(e["tokens_out"] for e in entries) > 0
    # No credential ever reached the CLI's own state.
    state = claude.services.settings.home_dir / "kennel"
    for path in state.rglob("*"):
        if path.is_file():
            assert REAL_KEY.encode() not in path.read_bytes(), path


async def test_stop_kills_the_cli_within_two_seconds(
    claude: Driver, model: ScriptedModelServer
) -> None:
    repo, before = await hang_a_task(claude, model, timeout=60)
    assert _claude_processes(repo), "the CLI should be running now"
    loop = asyncio.get_running_loop()
    started = loop.time()
    reply = await claude.ask("/stop", "Stopped", 10)
    assert loop.time() - started < 2.0
    assert "still alive" not in reply
    assert _claude_processes(repo) == []
    assert tree_snapshot(repo) == before
    status = await claude.ask("/status", "Fetch ·")
    assert "ALERT" in status


async def test_model_error_gives_clear_failure(claude: Driver, model: ScriptedModelServer) -> None:
    model.script(Error(500, "upstream exploded"))
    reply = await claude.ask("fix the typo in README.md of demo", "failed", 90)
    assert "Task #1 failed" in reply and "demo is unchanged" in reply
    assert "ALERT" in await claude.ask("/status", "Fetch ·")


async def test_garbage_from_the_model(claude: Driver, model: ScriptedModelServer) -> None:
    model.default = Garbage()  # every call, retries included, gets garbage
    reply = await claude.ask("fix the typo in README.md of demo", "failed", 90)
    assert "unchanged" in reply
    assert "ALERT" in await claude.ask("/status", "Fetch ·")


async def test_cli_that_prints_garbage_and_exits_nonzero(
    make_settings: Callable[..., Settings], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_bin = tmp_path / "bin"
    fake_bin.mkdir()
    script = fake_bin / "claude"
    script.write_text(
        "#!/bin/sh\necho 'not json at all'\necho '{\"half\": ' \n"
        "echo 'boom: something broke' >&2\nexit 3\n"
    )
    script.chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake_bin}:{os.environ['PATH']}")
    app, claude = await start_driver(
        make_settings(FETCH_HARNESS="claude-code", ANTHROPIC_API_KEY="sk-x")
    )
    try:
        reply = await claude.ask("fix the typo in README.md of demo", "failed", 30)
        assert "exit code 3" in reply and "boom: something broke" in reply
        assert "ALERT" in await claude.ask("/status", "Fetch ·")
    finally:
        await app.__aexit__(None, None, None)


async def test_denied_edit_is_a_failure_not_success(
    claude: Driver, model: ScriptedModelServer
) -> None:
    """A write outside the workspace is denied; the CLI exits 0, Fetch still says no."""
    model.script(EditFile("/etc/hostname", "x", "y"), Text("done"))
    reply = await claude.ask("fix the typo in README.md of demo", "Task #1 failed", 90)
    assert "Apply?" not in reply
