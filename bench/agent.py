"""Benchmark: what the orchestrator model is sent (issue 13).

The whole app runs in-process (terminal channel, a fresh home and workspace) with the
planner pointed at the scripted model server over real HTTP, through the real openai
SDK. Measured on the wire, as the server received it:

* the bytes of the request for "Say hello" (the first turn: system prompt, tool
  schemas, the message, the session note); the budget is 8 KB;
* the bytes of the tenth turn of a conversation (nine turns of history before it);
* that the system prompt is byte-identical on every request, and that each turn's
  request minus its last message (the session note) is a byte-identical prefix of the
  next turn's request: what a provider's prompt cache can reuse.

N is the number of turns of the conversation (10 by default).
"""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

from bench._common import fresh_dirs, table

HELLO_BUDGET = 8_000  # "under 8 KB", read strictly


async def _measure(turns: int) -> dict[str, Any]:
    from bench._common import model_env
    from channels.terminal import TerminalChannel
    from orchestrator.app import build_app
    from orchestrator.config import load_settings
    from tests.fakes.model_server import ScriptedModelServer, Text

    with fresh_dirs("agent") as (home, workspace):
        async with ScriptedModelServer() as model:
            settings = load_settings(None, model_env(home, workspace, model.url))
            terminal = TerminalChannel(settings.terminal.chat)
            app = build_app(settings, channels=[terminal])
            await app.__aenter__()
            try:
                for n in range(turns):
                    model.script(Text(f"Hello! This is answer number {n}, short and sweet."))
                    await terminal.submit(
                        "Say hello" if n == 0 else f"and say hello again, time number {n}"
                    )
                    while (
                        f"number {n},"
                        not in (await asyncio.wait_for(terminal.outbox.get(), 30)).text
                    ):
                        pass
            finally:
                await app.__aexit__(None, None, None)
            sent = [r for r in model.requests if r.dialect == "openai_chat"]
    bodies = [json.loads(r.raw) for r in sent]
    systems = {json.dumps(b["messages"][0]) for b in bodies}
    prefixes = all(
        bodies[i + 1]["messages"][: len(bodies[i]["messages"]) - 1] == bodies[i]["messages"][:-1]
        for i in range(len(bodies) - 1)
    )
    first = bodies[0]
    return {
        "turns": turns,
        "hello_bytes": len(sent[0].raw),
        "hello_system_bytes": len(first["messages"][0]["content"].encode()),
        "hello_tools_bytes": len(json.dumps(first["tools"]).encode()),
        "hello_tools": len(first["tools"]),
        "last_turn_bytes": len(sent[-1].raw),
        "system_identical": len(systems) == 1,
        "prefix_identical": prefixes,
        "hello_under_budget": len(sent[0].raw) < HELLO_BUDGET,
    }


def run(n: int) -> dict[str, Any]:
    # A verdict, not an assertion (benchmarks never fail); tests/agent/test_wire_bytes.py
    # asserts the same figures.
    return asyncio.run(_measure(max(2, n)))


def render(result: dict[str, Any]) -> str:
    rows = [
        ['"Say hello" request', result["hello_bytes"]],
        ["  of which the system prompt", result["hello_system_bytes"]],
        [f"  of which {result['hello_tools']} tool schemas", result["hello_tools_bytes"]],
        [f"turn {result['turns']} request", result["last_turn_bytes"]],
    ]
    same = "yes" if result["system_identical"] and result["prefix_identical"] else "NO"
    verdict = "PASS" if result["hello_under_budget"] and same == "yes" else "MISS"
    return (
        table("Orchestrator model requests (bytes on the wire)", ["request", "bytes"], rows)
        + f"\n{verdict}: 'Say hello' under {HELLO_BUDGET} bytes; system prompt and "
        f"prefix byte-identical across turns: {same}"
    )


if __name__ == "__main__":
    print(render(run(int(sys.argv[1]) if len(sys.argv) > 1 else 10)))
