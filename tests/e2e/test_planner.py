"""The orchestrator loop through the real openai SDK against the scripted Chat Completions
fake (real HTTP on 127.0.0.1): tool calls, model mistakes, limits and outages."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable

import pytest

from orchestrator.config import Settings
from tests.conftest import Driver, start_driver
from tests.fakes.model_server import Delay, Error, ScriptedModelServer, Text, ToolCall
from tests.fakes.wire import JsonObject


@pytest.fixture
async def model() -> AsyncIterator[ScriptedModelServer]:
    async with ScriptedModelServer() as srv:
        yield srv


@pytest.fixture
async def planned(
    model: ScriptedModelServer, make_settings: Callable[..., Settings]
) -> AsyncIterator[Driver]:
    settings = make_settings(
        FETCH_MODEL_BASE_URL=model.url + "/v1",
        FETCH_MODEL="planner-1",
        FETCH_MODEL_API_KEY="sk-orch",
        FETCH__MODEL__MAX_RETRIES="0",
    )
    app, driver = await start_driver(settings)
    try:
        yield driver
    finally:
        await app.__aexit__(None, None, None)


def _chat_calls(model: ScriptedModelServer) -> list[JsonObject]:
    return [r.body for r in model.requests if r.dialect == "openai_chat" and r.body]


async def test_model_plans_and_hands_off_to_the_harness(
    planned: Driver, model: ScriptedModelServer
) -> None:
    model.script(
        ToolCall("workspace_list", {}),
        ToolCall("task_create", {"repo": "demo", "instruction": "fix the typo in README.md"}),
    )
    await planned.ask("the readme of demo has a typo, sort it out please", "Apply?")
    bodies = _chat_calls(model)
    assert len(bodies) == 2
    first = bodies[0]
    assert first["model"] == "planner-1"
    tools = {t["function"]["name"] for t in first["tools"]}
    assert {"workspace_list", "workspace_select", "task_create", "ask_user"} <= tools
    system = first["messages"][0]["content"]
    assert "You are Fetch" in system and "demo" in system and "Never change code" in system
    # The tool result went back to the model before it decided.
    second = bodies[1]["messages"]
    assert any(m.get("role") == "tool" and "demo" in m.get("content", "") for m in second)
    assert model.requests[0].headers["authorization"] == "Bearer sk-orch"
    await planned.ask("no", "Discarded")
    await planned.services.store.messages.flush()
    rows = list(
        await planned.services.store.db.conn.execute_fetchall(
            "SELECT tokens_in, tokens_out, model FROM messages WHERE model IS NOT NULL"
        )
    )
    assert rows and rows[0][0] > 0 and rows[0][2] == "planner-1"


async def test_text_answer_records_tokens(planned: Driver, model: ScriptedModelServer) -> None:
    model.script(Text("A flaky test passes and fails without code changes."))
    reply = await planned.ask("what is a flaky test?", "flaky")
    assert "without code changes" in reply
    await planned.services.store.messages.flush()
    rows = list(
        await planned.services.store.db.conn.execute_fetchall(
            "SELECT tokens_in, tokens_out FROM messages WHERE direction='out' AND model='planner-1'"
        )
    )
    assert rows and rows[-1][0] > 0 and rows[-1][1] > 0


async def test_bad_json_arguments_go_back_to_the_model(
    planned: Driver, model: ScriptedModelServer
) -> None:
    model.script(
        ToolCall("task_create", raw_arguments="{not json"),
        ToolCall("nonexistent_tool", {}),
        ToolCall("task_create", {"repo": "demo"}),
        Text("Sorry, I got confused. Which file?"),
    )
    reply = await planned.ask("what does the code do?", "confused")
    assert "Which file" in reply
    bodies = _chat_calls(model)
    tool_msgs = [m["content"] for m in bodies[-1]["messages"] if m.get("role") == "tool"]
    assert any("not valid JSON" in c for c in tool_msgs)
    assert any("unknown tool" in c for c in tool_msgs)
    assert any("missing required argument 'instruction'" in c for c in tool_msgs)
    assert "ALERT" in await planned.ask("/status", "Fetch ·")


async def test_iteration_cap(planned: Driver, model: ScriptedModelServer) -> None:
    model.default = ToolCall("workspace_list", {})
    reply = await planned.ask("what's up with the code?", "stopped planning", 60)
    assert "25 steps" in reply
    assert len(_chat_calls(model)) == 25


async def test_ask_user_waits_for_the_answer(planned: Driver, model: ScriptedModelServer) -> None:
    model.script(
        ToolCall("ask_user", {"question": "Which file has the typo?"}),
        ToolCall("task_create", {"repo": "demo", "instruction": "fix README.md"}),
    )
    await planned.ask("there's a typo somewhere", "Which file has the typo?")
    assert "WAITING" in await planned.ask("/status", "Fetch ·")
    await planned.ask("README.md", "Apply?")
    await planned.ask("no", "Discarded")


async def test_model_outage_falls_back_to_the_harness(
    planned: Driver, model: ScriptedModelServer
) -> None:
    model.script(Error(500, "overloaded"))
    await planned.ask("fix the typo in README.md of demo", "straight to the harness")
    await planned.expect("Apply?")
    await planned.ask("no", "Discarded")


async def test_model_outage_on_a_question_is_explained(
    planned: Driver, model: ScriptedModelServer
) -> None:
    model.script(Error(503, "down"))
    reply = await planned.ask("why is the sky blue?", "couldn't think")
    assert "HTTP 503" in reply


async def test_stop_while_the_model_thinks_starts_no_task(
    planned: Driver, model: ScriptedModelServer
) -> None:
    """A /stop sent while the model is still working out a request (it ends up asking
    for a task) is not "Nothing is running": that request starts no task. The next one
    does."""
    task = {"repo": "demo", "instruction": "fix the typo in README.md"}
    model.script(Delay(3.0, ToolCall("task_create", task)))
    await planned.push("the readme of demo has a typo, sort it out please")
    await model.wait_for_requests(1, timeout=10)
    session = await planned.services.sessions.get(planned.terminal_key())
    assert session.turn is not None  # the request is being worked out
    stopped = await planned.ask("/stop", "Stopped")
    assert "will not start a task" in stopped, stopped
    for _ in range(400):  # the model answers (a task), and the request's turn ends
        if session.turn is None:
            break
        await asyncio.sleep(0.05)
    assert session.turn is None
    assert not any("On it" in t for t in planned.seen), planned.seen
    assert await planned.services.store.work.get_task(1) is None
    assert planned.services.runner._runs == {}
    # Only the message being worked out was stopped: the next request runs.
    model.script(ToolCall("task_create", task))
    await planned.ask("the readme of demo has a typo, sort it out please", "Apply?", 60)
    await planned.ask("no", "Discarded")
