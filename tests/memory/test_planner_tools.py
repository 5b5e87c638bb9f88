"""The orchestrator model's memory tools: memory_write, memory_search, memory_read."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable

import pytest

from orchestrator.config import Settings
from tests.conftest import Driver, start_driver
from tests.fakes.model_server import ScriptedModelServer, Text, ToolCall


@pytest.fixture
async def planned(
    model: ScriptedModelServer,
    make_settings: Callable[..., Settings],
) -> AsyncIterator[Driver]:
    settings = make_settings(
        FETCH_MODEL_BASE_URL=model.url + "/v1",
        FETCH_MODEL="planner-1",
        FETCH__MODEL__MAX_RETRIES="0",
        FETCH_EMBEDDING_BASE_URL=model.url + "/v1",
    )
    app, driver = await start_driver(settings)
    try:
        yield driver
    finally:
        await app.__aexit__(None, None, None)


def _tool_messages(model: ScriptedModelServer) -> list[str]:
    return [
        str(m.get("content"))
        for r in model.requests
        if r.dialect == "openai_chat"
        for m in (r.body or {}).get("messages", [])
        if m.get("role") == "tool"
    ]


async def test_model_writes_searches_and_reads(planned: Driver, model: ScriptedModelServer) -> None:
    model.script(
        ToolCall(
            "memory_write",
            {"content": "The staging database port is 5433", "type": "fact", "tags": ["infra"]},
        ),
        Text("Noted: staging is on 5433."),
    )
    await planned.ask("remember that staging uses port 5433", "Noted")
    first = next(r.body for r in model.requests if r.dialect == "openai_chat")
    tools = {t["function"]["name"] for t in first["tools"]}  # type: ignore[index]
    assert {"memory_write", "memory_search", "memory_read"} <= tools
    item = await planned.services.memory.get(1)
    assert item is not None and item.source == "orchestrator" and item.tags == ("infra",)
    model.script(
        ToolCall("memory_search", {"query": "postgres port", "limit": 3}),
        ToolCall("memory_read", {"chunk_id": 77}),
        Text("Staging is on 5433."),
    )
    await planned.ask("staging port, anything stored?", "Staging is on 5433")
    results = _tool_messages(model)
    found = json.loads(next(r for r in results if r.startswith('{"mode"')))
    assert found["hits"][0]["content"] == "The staging database port is 5433"
    assert any("no archived conversation #77" in r for r in results)
    model.script(ToolCall("memory_write", {"content": "x", "type": "opinion"}), Text("ok"))
    await planned.ask("remember my opinion", "ok")
    assert any("type must be one of fact, preference, learning" in r for r in _tool_messages(model))
