"""The same MCP round trip as test_claude_mcp, in the Docker kennel: --network none, the
relay's socket the only way out, and /mcp reached through it by the real Claude Code."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable

import pytest

from orchestrator.config import Settings
from tests.conftest import Driver, start_driver
from tests.docker.conftest import docker_client, kennel_image  # noqa: F401 - fixtures
from tests.fakes.model_server import EditFile, ScriptedModelServer, Text, ToolCall

pytestmark = pytest.mark.real


@pytest.fixture
async def docker_mem(
    kennel_image: str,  # noqa: F811 - the fixture, imported above
    model: ScriptedModelServer,
    make_settings: Callable[..., Settings],
) -> AsyncIterator[Driver]:
    settings = make_settings(
        FETCH_KENNEL="docker",
        FETCH_HARNESS="claude-code",
        ANTHROPIC_BASE_URL=model.url,
        ANTHROPIC_API_KEY="sk-ant-docker",
        FETCH_EMBEDDING_BASE_URL=model.url + "/v1",
    )
    app, driver = await start_driver(settings)
    try:
        yield driver
    finally:
        await app.__aexit__(None, None, None)


async def test_claude_in_docker_uses_memory_over_the_relay_socket(
    docker_mem: Driver,
    model: ScriptedModelServer,
) -> None:
    await docker_mem.ask("/remember the demo README uses British spelling", "Remembered #1")
    model.script(
        ToolCall("mcp__fetch-memory__memory_search", {"query": "README spelling"}),
        ToolCall(
            "mcp__fetch-memory__memory_write",
            {"content": "fixed Teh in demo README", "type": "learning"},
        ),
        EditFile("README.md", "Teh quick", "The quick"),
        Text("Fixed it."),
    )
    diff = await docker_mem.ask("fix the typo in README.md of demo", "Apply?", 180)
    assert "+The quick" in diff
    sent = json.dumps([r.body for r in model.requests if r.dialect == "anthropic"])
    assert "British spelling" in sent and "saved as memory #2" in sent
    written = await docker_mem.services.memory.get(2)
    assert written is not None and written.source == "harness:claude-code"
    await docker_mem.ask("yes", "Committed")
