"""What the model is sent, in bytes on the wire (bench/agent.py prints the same): the
first "Say hello" stays under 8 KB with every tool offered, and over ten turns the
system prompt is byte-identical and each request (minus its session note) is a prefix
of the next one's."""

from __future__ import annotations

import json
from itertools import pairwise

from orchestrator.tools import build_tools
from tests.conftest import Driver
from tests.fakes.model_server import ScriptedModelServer, Text


async def test_say_hello_bytes_and_the_prefix_over_ten_turns(
    agent: Driver, model: ScriptedModelServer
) -> None:
    for n in range(10):
        model.script(Text(f"Hello! answer number {n}."))
        await agent.ask("Say hello" if n == 0 else f"and say hello again, time {n}", f"number {n}.")
    sent = [r for r in model.requests if r.dialect == "openai_chat"]
    assert len(sent) == 10
    assert len(sent[0].raw) < 8_000, len(sent[0].raw)
    bodies = [json.loads(r.raw) for r in sent]
    # Every tool, offered to the owner.
    assert [t["function"]["name"] for t in bodies[0]["tools"]] == build_tools().names()
    assert len({json.dumps(b["messages"][0]) for b in bodies}) == 1
    for before, after in pairwise(bodies):
        prefix = before["messages"][:-1]
        assert after["messages"][: len(prefix)] == prefix
    assert len(bodies[-1]["messages"]) == 1 + 19 + 1  # system, 19 messages, the note
