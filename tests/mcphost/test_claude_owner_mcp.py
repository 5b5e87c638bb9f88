"""The owner's MCP server, end to end: the reference filesystem server from the registry
(``mcp-server-filesystem``, installed by .ci/install.sh) runs on the host in its own
sandbox; the real Claude Code in the bwrap kennel calls it through the relay at
``/mcp/files``; the call asks the owner (a new server's default), who answers on the
phone (``/grants yes <nonce> once``); the file's text reaches the model as the tool
result. A second call asks again (the grant was once) and the owner's "no" refuses it.
The CLI never reaches the server but through the relay, and holds nothing of it."""

from __future__ import annotations

import asyncio
import json
import re
import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from orchestrator.config import Settings
from tests.conftest import Driver, start_driver
from tests.fakes.model_server import EditFile, ScriptedModelServer, Text, ToolCall
from tests.fakes.require import require_binary
from tests.fakes.wire import JsonObject

pytestmark = pytest.mark.real
READ = "mcp__files__read_text_file"
FAKE = Path(__file__).resolve().parents[1] / "fakes" / "mcp_stdio_server.py"


@pytest.fixture
async def model() -> AsyncIterator[ScriptedModelServer]:
    async with ScriptedModelServer() as srv:
        yield srv


@pytest.fixture
async def claude(
    model: ScriptedModelServer, make_settings: Callable[..., Settings], tmp_path: Path
) -> AsyncIterator[tuple[Driver, Path]]:
    require_binary("claude")
    server = require_binary("mcp-server-filesystem")
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "notes.txt").write_text("the docs say: British spelling\n")
    config = tmp_path / "config.yaml"
    config.write_text(
        f"mcp:\n  servers:\n    files:\n      command: [{server}, {docs}]\n      binds: [{docs}]\n"
    )
    settings = make_settings(
        FETCH_CONFIG=str(config),
        FETCH_HARNESS="claude-code",
        ANTHROPIC_BASE_URL=model.url,
        ANTHROPIC_API_KEY="sk-ant-real-key-for-relay",
    )
    app, driver = await start_driver(settings)
    try:
        yield driver, docs
    finally:
        await app.__aexit__(None, None, None)


def _tool_results(body: JsonObject) -> list[str]:
    out = []
    for message in body.get("messages", []):
        content = message.get("content")
        if isinstance(content, list):
            for block in content:
                if isinstance(block, dict) and block.get("type") == "tool_result":
                    out.append(json.dumps(block.get("content")))
    return out


async def _answer(driver: Driver, yes: bool) -> None:
    asked = await driver.expect("/grants yes", 90)
    assert "mcp:files:read_text_file" in asked, asked
    nonce = re.search(r"/grants yes (\S+)", asked)
    assert nonce is not None, asked
    word = "yes" if yes else "no"
    await driver.push(f"/grants {word} {nonce.group(1)}" + (" once" if yes else ""))


async def test_claude_reads_the_owners_server_after_the_owner_says_yes(
    claude: tuple[Driver, Path], model: ScriptedModelServer
) -> None:
    driver, docs = claude
    repo = driver.services.workspace.path("demo")
    model.script(
        ToolCall(READ, {"path": str(docs / "notes.txt")}),
        ToolCall(READ, {"path": str(docs / "notes.txt")}),
        EditFile(str(repo / "README.md"), "Teh quick", "The quick"),
        Text("Fixed it, as the docs say."),
    )
    await driver.push("fix the typo in README.md of demo")
    await _answer(driver, yes=True)  # the first call waits for this
    await _answer(driver, yes=False)  # the grant was once: the second call asks again
    card = await driver.expect("Apply? (yes/no)", 120)
    assert "+The quick" in card
    turns = [r for r in model.requests if r.path.endswith("/messages") and r.body]
    offered = {t.get("name") for t in (turns[0].body or {}).get("tools", [])}
    assert READ in offered and "mcp__files__write_file" in offered, sorted(offered)
    results = [r for t in turns for r in _tool_results(t.body or {})]
    assert any("British spelling" in r for r in results), results
    assert any("owner said no" in r for r in results), results
    # Nothing of the MCP traffic went to the vendor; the calls are on record.
    assert not any(r.path.startswith("/mcp") for r in model.requests)
    record = (driver.services.settings.home_dir / "mcp.jsonl").read_text().splitlines()
    outcomes = [json.loads(line)["outcome"] for line in record]
    assert outcomes == ["ok", "refused"], outcomes
    await driver.ask("no", "Discarded")
    tools = await driver.ask("/tools", "MCP servers")
    assert "mcp:files — read_file" in tools
    await asyncio.sleep(0)


@pytest.fixture
async def ruled(
    model: ScriptedModelServer,
    make_settings: Callable[..., Settings],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> AsyncIterator[Driver]:
    """The tests' own stdio server under rules: echo allowed, secret denied; a second
    server that cannot start."""
    require_binary("claude")
    fake = FAKE
    monkeypatch.setenv("FETCH_TEST_MCP_SECRET", "mcp-secret-never-in-the-kennel")
    config = tmp_path / "config.yaml"
    config.write_text(
        "permissions:\n  rules:\n"
        "    - {effect: allow, what: 'mcp:fake:echo', who: owner}\n"
        "    - {effect: deny, what: 'mcp:fake:secret'}\n"
        "mcp:\n  servers:\n"
        f"    fake:\n      command: [{sys.executable}, {fake}]\n      binds: [{fake.parent}]\n"
        "      env: {FAKE_SECRET: '${FETCH_TEST_MCP_SECRET}'}\n"
        f"    broken:\n      command: [{sys.executable}, {fake}, --die]\n"
        f"      binds: [{fake.parent}]\n"
    )
    settings = make_settings(
        FETCH_CONFIG=str(config),
        FETCH_HARNESS="claude-code",
        ANTHROPIC_BASE_URL=model.url,
        ANTHROPIC_API_KEY="sk-ant-real-key-for-relay",
    )
    app, driver = await start_driver(settings)
    try:
        yield driver
    finally:
        await app.__aexit__(None, None, None)


async def test_rules_decide_without_asking_and_a_dead_server_is_left_out(
    ruled: Driver, model: ScriptedModelServer
) -> None:
    repo = ruled.services.workspace.path("demo")
    model.script(
        ToolCall("mcp__fake__echo", {"text": "ping"}),
        ToolCall("mcp__fake__secret", {}),
        EditFile(str(repo / "README.md"), "Teh quick", "The quick"),
        Text("Done."),
    )
    card = await ruled.ask("fix the typo in README.md of demo", "Apply? (yes/no)", 120)
    assert "+The quick" in card
    assert not any("/grants yes" in seen for seen in ruled.seen), ruled.seen  # no question
    turns = [r for r in model.requests if r.path.endswith("/messages") and r.body]
    offered = {t.get("name") for t in (turns[0].body or {}).get("tools", [])}
    assert "mcp__fake__echo" in offered
    assert not any(str(n).startswith("mcp__broken") for n in offered)  # down: not offered
    results = [r for t in turns for r in _tool_results(t.body or {})]
    assert any("echo: ping" in r for r in results), results
    assert any("refused: mcp:fake:secret" in r for r in results), results
    # The server's secret stayed with the server: nowhere in what the CLI sent or got.
    assert not any("mcp-secret-never-in-the-kennel" in json.dumps(r.body) for r in model.requests)
    await ruled.ask("no", "Discarded")
    tools = await ruled.ask("/tools", "MCP servers")
    assert "mcp:broken — down:" in tools and "no database" in tools, tools
