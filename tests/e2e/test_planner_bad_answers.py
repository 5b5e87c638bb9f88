"""The orchestrator model's bad answers, through the real openai SDK against the scripted
server (issue 12): tool-call arguments sent as a JSON object run the tool; an HTML page,
a body that is not JSON, or an error object under HTTP 200 give a clear message and,
for a task, the fallback to the harness — never "Something went wrong"."""

from __future__ import annotations

import json

import pytest

from tests.conftest import Driver
from tests.e2e.test_planner import model, planned
from tests.fakes.model_server import Garbage, ScriptedModelServer, Text

__all__ = ["model", "planned"]  # the fixtures, shared with the planner's tests

TASK = "fix the typo in README.md of demo"


def _completion(arguments: object) -> bytes:
    call = {
        "id": "call_1",
        "type": "function",
        "function": {"name": "workspace_list", "arguments": arguments},
    }
    return json.dumps(
        {
            "id": "c1",
            "object": "chat.completion",
            "created": 1,
            "model": "planner-1",
            "choices": [
                {
                    "index": 0,
                    "finish_reason": "tool_calls",
                    "message": {"role": "assistant", "content": None, "tool_calls": [call]},
                }
            ],
        }
    ).encode()


@pytest.mark.parametrize("arguments", [{}, None])
async def test_tool_arguments_as_an_object_run_the_tool(
    planned: Driver,
    model: ScriptedModelServer,
    arguments: object,
) -> None:
    model.script(Garbage(_completion(arguments)), Text("Your repos: demo."))
    await planned.ask("what is a monad?", "Your repos: demo.")
    second = [r.body for r in model.requests if r.dialect == "openai_chat"][1]
    assert second is not None
    sent = second["messages"]
    assert isinstance(sent, list)
    asked = next(m for m in sent if m.get("tool_calls"))
    assert asked["tool_calls"][0]["function"]["arguments"] == "{}"  # a string again
    result = next(m for m in sent if m.get("role") == "tool")
    assert "demo" in result["content"] and "error" not in result["content"]


BAD = {
    "html": (
        Garbage(b"<html><body>502 Bad Gateway</body></html>", "text/html"),
        "answered an HTML page, not a completion",
    ),
    "not json": (
        Garbage(b"this is not what you expected {"),
        "answered something that is not a completion",
    ),
    "error in 200": (
        Garbage(b'{"error": {"message": "model overloaded", "type": "x"}}'),
        "answered an error: model overloaded",
    ),
}


@pytest.mark.parametrize("case", sorted(BAD))
async def test_a_bad_answer_hands_the_task_to_the_harness(
    planned: Driver,
    model: ScriptedModelServer,
    case: str,
) -> None:
    step, said = BAD[case]
    model.script(step)
    await planned.push(TASK)
    told = " ".join((await planned.expect("handing the task straight")).split())
    assert said in told, told
    await planned.expect("Apply? (yes/no)", 60)  # the harness ran the task
    assert not any("Something went wrong" in s for s in planned.seen), planned.seen


@pytest.mark.parametrize("case", sorted(BAD))
async def test_a_bad_answer_to_a_question_is_a_clear_message(
    planned: Driver,
    model: ScriptedModelServer,
    case: str,
) -> None:
    step, said = BAD[case]
    model.script(step)
    told = " ".join((await planned.ask("what is a monad?", "I couldn't think")).split())
    assert said in told, told
    assert not any("Something went wrong" in s for s in planned.seen), planned.seen
