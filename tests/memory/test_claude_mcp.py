"""The real Claude Code CLI, in the local kennel, calls Fetch's memory over MCP through
the relay's socket: the scripted model asks for memory_search and memory_write; the
CLI sends them to /mcp; the results come back to the model as tool results."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable

import pytest

from orchestrator.config import Settings
from tests.conftest import Driver, start_driver
from tests.fakes.model_server import EditFile, ScriptedModelServer, Text, ToolCall
from tests.fakes.require import require_binary
from tests.fakes.wire import JsonObject

pytestmark = pytest.mark.real
SEARCH = "mcp__fetch-memory__memory_search"
WRITE = "mcp__fetch-memory__memory_write"


@pytest.fixture
async def claude(
    model: ScriptedModelServer,
    make_settings: Callable[..., Settings],
) -> AsyncIterator[Driver]:
    require_binary("claude")
    settings = make_settings(
        FETCH_HARNESS="claude-code",
        ANTHROPIC_BASE_URL=model.url,
        ANTHROPIC_API_KEY="sk-ant-real-key-for-relay",
        FETCH_EMBEDDING_BASE_URL=model.url + "/v1",
    )
    app, driver = await start_driver(settings)
    try:
        yield driver
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


async def test_claude_searches_and_writes_memory_over_mcp(
    claude: Driver,
    model: ScriptedModelServer,
) -> None:
    await claude.ask(
        "/remember the README typo fix convention: keep British spelling", "Remembered #1"
    )
    repo = claude.services.workspace.path("demo")
    model.script(
        ToolCall(SEARCH, {"query": "README spelling convention", "limit": 3}),
        ToolCall(
            WRITE,
            {
                "content": "demo's README had the typo Teh; fixed to The",
                "type": "learning",
                "tags": ["demo"],
            },
        ),
        EditFile(str(repo / "README.md"), "Teh quick", "The quick"),
        Text("Fixed the typo, following the remembered convention."),
    )
    diff = await claude.ask("fix the typo in README.md of demo", "Apply? (yes/no)", 120)
    assert "+The quick" in diff

    turns = [
        r
        for r in model.requests
        if r.dialect == "anthropic"
        and r.path.endswith("/messages")
        and r.body
        and r.body.get("messages")
    ]
    offered = {t.get("name") for t in (turns[0].body or {}).get("tools", [])}
    assert {SEARCH, WRITE, "mcp__fetch-memory__memory_read"} <= offered, sorted(offered)
    # The task's prompt carried the relevant memory (context_for).
    first = turns[0].body
    assert first is not None
    assert "keep British spelling" in json.dumps(first["messages"])
    # memory_search's answer reached the model as the tool result.
    results = [r for t in turns for r in _tool_results(t.body or {})]
    assert any("keep British spelling" in r and "hybrid" in r for r in results), results
    assert any("saved as memory #2" in r for r in results), results
    written = await claude.services.memory.get(2)
    assert written is not None and written.source == "harness:claude-code"
    assert written.kind == "learning" and written.tags == ("demo",)
    assert not model.mismatches and not model.failures
    # No MCP call left the host: the vendor side never saw /mcp.
    assert not any(r.path.startswith("/mcp") for r in model.requests)
    await claude.ask("yes", "Committed")
