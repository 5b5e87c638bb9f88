"""The orchestrator's tool calls in a chat's replay: the real planner (openai SDK) against
the scripted model server on 127.0.0.1 calls tools; each call is journaled with its
duration and shown on the session page beside the messages."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable

import pytest

from orchestrator.config import Settings
from orchestrator.dashboard.timeline import read_tail
from orchestrator.store.db import key_str
from tests.dashboard.conftest import Web, start_web, stop_web
from tests.fakes.model_server import ScriptedModelServer, Text, ToolCall


@pytest.fixture
async def model() -> AsyncIterator[ScriptedModelServer]:
    async with ScriptedModelServer() as srv:
        yield srv


async def test_the_planners_tool_calls_are_on_the_replay(
    model: ScriptedModelServer, web_settings: Callable[..., Settings]
) -> None:
    web: Web = await start_web(
        web_settings(
            FETCH_MODEL_BASE_URL=model.url + "/v1",
            FETCH_MODEL="planner-1",
            FETCH_MODEL_API_KEY="sk-orch",
            FETCH__MODEL__MAX_RETRIES="0",
        )
    )
    try:
        model.script(ToolCall("workspace_list", {}), Text("You have one repo: demo."))
        await web.driver.ask("what does the code do?", "one repo")
        key = web.driver.terminal_key()
        entries, _ = read_tail(web.services.journal.path(key))
        tools = [e for e in entries if e.role == "tool"]
        assert [e.text for e in tools] == ["workspace_list"]
        assert tools[0].ms is not None and tools[0].ms >= 0 and tools[0].ok
        status, body = await web.get(f"/sessions/{key_str(key)}")
        assert status == 200
        assert "<code>workspace_list</code>" in body
        assert "what does the code do?" in body and "You have one repo: demo." in body
    finally:
        await stop_web(web)
