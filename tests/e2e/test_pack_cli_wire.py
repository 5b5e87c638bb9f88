"""A task routed to a pack member reaches the REAL coding CLI with that member's
instructions: each CLI (Claude Code, Codex, Gemini CLI, Copilot CLI) runs headless in the
local kennel against the scripted model server, which records what the CLI sent. The
member's instructions in the model request prove the adapter wrote them where the CLI
reads user-level instructions; the diff and the tree prove nothing was written into the
repository."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from orchestrator.config import Settings
from tests.conftest import Driver, start_driver, tree_snapshot
from tests.fakes.model_server import EditFile, ScriptedModelServer, Text
from tests.fakes.require import require_binary

pytestmark = pytest.mark.real
KEY = "sk-canary-pack-key-5d1e"
# ROUTING.md sends "failing test" to test-fixer; its shipped instructions say this.
MARK = "You are Fetch's test fixer."
HEADER = "# Fetch pack member: test-fixer"
INSTRUCTION_FILES = {"CLAUDE.md", "AGENTS.md", "GEMINI.md", "copilot-instructions.md"}


@dataclass(frozen=True)
class Cli:
    binary: str
    env: Callable[[str], dict[str, str]]  # the model server's URL -> settings env


CLIS = {
    "claude-code": Cli("claude", lambda url: {"ANTHROPIC_BASE_URL": url, "ANTHROPIC_API_KEY": KEY}),
    "codex": Cli(
        "codex",
        lambda url: {"FETCH__PROVIDERS__OPENAI__BASE_URL": url + "/v1", "OPENAI_API_KEY": KEY},
    ),
    "gemini-cli": Cli(
        "gemini",
        lambda url: {"FETCH__PROVIDERS__GEMINI__BASE_URL": url, "GEMINI_API_KEY": KEY},
    ),
    "copilot": Cli(
        "copilot",
        lambda url: {"FETCH__PROVIDERS__OPENAI__BASE_URL": url + "/v1", "OPENAI_API_KEY": KEY},
    ),
}


@pytest.fixture
async def model() -> AsyncIterator[ScriptedModelServer]:
    async with ScriptedModelServer() as srv:
        yield srv


@pytest.fixture(params=sorted(CLIS))
async def fetch_cli(
    request: pytest.FixtureRequest,
    model: ScriptedModelServer,
    make_settings: Callable[..., Settings],
    monkeypatch: pytest.MonkeyPatch,
) -> AsyncIterator[tuple[str, Driver]]:
    name: str = request.param
    cli = CLIS[name]
    require_binary(cli.binary)
    unpacked = Path.home() / ".cache" / "copilot"
    if name == "copilot" and (unpacked / "pkg").is_dir():
        monkeypatch.setenv("COPILOT_PKG_CACHE_HOME", str(unpacked))  # as test_four_harnesses
    app, driver = await start_driver(make_settings(FETCH_HARNESS=name, **cli.env(model.url)))
    try:
        yield name, driver
    finally:
        await app.__aexit__(None, None, None)


async def test_routed_member_instructions_reach_the_cli_not_the_repo(
    fetch_cli: tuple[str, Driver], model: ScriptedModelServer
) -> None:
    name, fetch = fetch_cli
    repo = fetch.services.workspace.path("demo")
    before = tree_snapshot(repo)
    # Claude Code's Edit wants an absolute path (the bwrap kennel shows the repo where it
    # is); the others patch relative to their working folder, whole lines (apply_patch).
    target = str(repo / "README.md") if name == "claude-code" else "README.md"
    model.script(
        EditFile(target, "Teh quick brown fox.", "The quick brown fox."), Text("Fixed it.")
    )
    first = await fetch.ask("fix the failing test in README.md of demo", "On it", 30)
    assert f"test-fixer on {name}" in first  # the first progress line names the member
    # The CLI needs seconds to start and call the model: /status sees the task running.
    status = await fetch.ask("/status", "Fetch")
    assert f"by test-fixer on {name}" in status, status
    diff = await fetch.expect("Apply? (yes/no)", 150)
    sent = [r.raw.decode("utf-8", "replace") for r in model.model_requests]
    assert sent, "the CLI never called the model"
    # JSON escapes the apostrophe in some dialects' bodies; the header has none.
    assert any(HEADER in body for body in sent), f"{name} did not receive the instructions"
    assert any(MARK in body or MARK.replace("'", "\\u0027") in body for body in sent)
    # Nothing but the requested change is in the diff, and no instructions file in the tree.
    assert "README.md" in diff and not any(f in diff for f in INSTRUCTION_FILES)
    during = tree_snapshot(repo)
    assert set(during) == set(before)
    await fetch.ask("no", "Discarded")
    assert tree_snapshot(repo) == before


async def test_a_member_preferring_claude_runs_there_with_its_model(
    model: ScriptedModelServer, make_settings: Callable[..., Settings], tmp_path: Path
) -> None:
    """The default harness is the demo; the owner's reviewer prefers Claude Code with its
    own model: the run uses Claude Code, and the model request names that model."""
    require_binary("claude")
    agents = tmp_path / "home" / "agents"
    agents.mkdir(parents=True)
    (agents / "reviewer.md").write_text(
        "---\nname: reviewer\nrole: reviews\nharness: claude-code\n"
        "model: claude-pack-canary\n---\nReviewer canary rules.\n"
    )
    settings = make_settings(FETCH_HARNESS="demo", **CLIS["claude-code"].env(model.url))
    app, fetch = await start_driver(settings)
    try:
        model.script(Text("Looks fine to me."))
        first = await fetch.ask("review README.md in demo", "On it", 30)
        assert "reviewer on claude-code" in first
        await fetch.expect("without changing any file", 120)
        turns = [r.body for r in model.model_requests if r.body and r.body.get("messages")]
        assert turns and all(b.get("model") == "claude-pack-canary" for b in turns)
        assert any("Reviewer canary rules." in json.dumps(b) for b in turns)
    finally:
        await app.__aexit__(None, None, None)
