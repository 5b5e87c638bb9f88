"""Conversation: each model turn carries the chat's history, the system prompt is frozen
per conversation (byte-identical on the wire across turns), rebuilt on /clear and on a
new day, history is bounded, and a context past its budget is compacted."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from identity import Identity
from tests.agent.conftest import bodies
from tests.conftest import Driver
from tests.fakes.model_server import Error, ScriptedModelServer, Text, ToolCall, Turn

Start = Callable[..., Awaitable[Driver]]


def _chat(body: dict[str, Any]) -> list[tuple[str, str]]:
    """(role, content) of a request, tool plumbing left out."""
    return [
        (m["role"], m.get("content") or "")
        for m in body["messages"]
        if m["role"] in ("system", "user", "assistant") and not m.get("tool_calls")
    ]


async def test_history_and_frozen_prefix_on_the_wire(
    agent: Driver, model: ScriptedModelServer
) -> None:
    model.script(
        Text("The quick fox is in README.md."),
        Turn(ToolCall("repo_read_file", {"repo": "demo", "path": "README.md"})),
        Text("It says Teh: a typo."),
        Text("Because 'Teh' should be 'The'."),
    )
    await agent.ask("what is in the demo repo?", "quick fox")
    await agent.ask("what does the readme say?", "a typo")
    await agent.ask("why?", "should be")
    sent = bodies(model)
    assert len(sent) == 4
    first, second, third = sent[0], sent[1], sent[3]
    # The system prompt: the same bytes on every request of the conversation.
    systems = {b["messages"][0]["content"] for b in sent}
    assert len(systems) == 1 and "You are Fetch" in systems.pop()
    # Turn 1 had no history: system, the message, the session note.
    assert [r for r, _ in _chat(first)] == ["system", "user", "user"]
    assert _chat(first)[1] == ("user", "what is in the demo repo?")
    assert _chat(first)[2][1].startswith("[session mode: ALERT")
    # Turn 3 ("why?") carries the whole conversation, in order.
    assert _chat(third)[1:-1] == [
        ("user", "what is in the demo repo?"),
        ("assistant", "The quick fox is in README.md."),
        ("user", "what does the readme say?"),
        ("assistant", "It says Teh: a typo."),
        ("user", "why?"),
    ]
    # Everything but the last message (that turn's session note) of turn 2's request is
    # a prefix of turn 3's request, byte for byte: what a provider caches.
    prefix = second["messages"][:-1]
    assert len(prefix) == 4 and prefix[-1] == {
        "role": "user",
        "content": "what does the readme say?",
    }
    assert third["messages"][: len(prefix)] == prefix


async def test_clear_and_a_new_day_rebuild_the_prompt(
    agent: Driver, model: ScriptedModelServer
) -> None:
    planner = agent.services.planner
    model.script(Text("one"), Text("two"), Text("three"), Text("four"))
    await agent.ask("hello there, first", "one")
    await agent.ask("hello there, second", "two")
    sent = bodies(model)
    assert sent[0]["messages"][0] == sent[1]["messages"][0]
    planner.now = lambda: 2_000_000_000.0  # 2033-05-18: another day
    await agent.ask("hello there, third", "three")
    day = bodies(model)[2]
    assert day["messages"][0] != sent[0]["messages"][0]
    assert "2033-05-18 (Wednesday)" in day["messages"][0]["content"]
    assert ("user", "hello there, first") in _chat(day)  # a new day keeps the history
    await agent.ask("/clear", "Cleared")
    await agent.ask("hello there, fourth", "four")
    fresh = bodies(model)[3]
    assert [r for r, _ in _chat(fresh)] == ["system", "user", "user"]  # history forgotten
    assert _chat(fresh)[1] == ("user", "hello there, fourth")
    # A new identity (COLLAR.md edited, Fetch restarted) rebuilds it too.
    services = agent.services
    services.identity = Identity(
        services.identity.collar.model_copy(update={"tone": "grumpy and terse"}),
        services.identity.alpha,
    )
    model.script(Text("five"))
    await agent.ask("hello there, fifth", "five")
    assert "Tone: grumpy and terse." in bodies(model)[4]["messages"][0]["content"]
    assert ("user", "hello there, fourth") in _chat(bodies(model)[4])


async def test_history_is_the_last_n_messages(start: Start, model: ScriptedModelServer) -> None:
    agent = await start(FETCH__MODEL__HISTORY_MESSAGES="4")
    for n in range(5):
        model.script(Text(f"answer {n}"))
        await agent.ask(f"hello there, question {n}", f"answer {n}")
    last = _chat(bodies(model)[-1])
    assert last[1:-1] == [
        ("user", "hello there, question 2"),
        ("assistant", "answer 2"),
        ("user", "hello there, question 3"),
        ("assistant", "answer 3"),
        ("user", "hello there, question 4"),
    ]


# ~1,400 tokens a message: three fit an 8,200-token budget with the prompt and the
# tools, four do not.
LONG = "lorem ipsum dolor sit amet " * 207


async def _three_long_parts(start: Start, model: ScriptedModelServer) -> Driver:
    """An agent with an 8,200-token context, told three long parts: the next one passes
    its budget."""
    agent = await start(FETCH__MODEL__CONTEXT_TOKENS="8200")
    for n in range(3):
        model.script(Text(f"noted {n}"))
        await agent.ask(f"hello there, part {n}: {LONG}", f"noted {n}")
    return agent


async def test_compaction_summarises_the_oldest_turns(
    start: Start, model: ScriptedModelServer
) -> None:
    agent = await _three_long_parts(start, model)
    # The next turn would pass the budget: the model is asked for a summary first.
    model.script(Text("The owner sent three long lorem ipsum parts."), Text("done"))
    await agent.ask(f"hello there, part 3: {LONG}", "done")
    summary_request, turn = bodies(model)[-2:]
    assert "tools" not in summary_request  # the summary call offers no tools
    assert "Summarise" in summary_request["messages"][0]["content"]
    assert "part 0" in summary_request["messages"][1]["content"]
    chat = _chat(turn)
    assert chat[1][1].startswith("[summary of earlier messages]\nThe owner sent three")
    assert all("part 0" not in c for _r, c in chat[2:])
    assert len(str(turn["messages"])) < 8200 * 4


async def test_compaction_without_a_summary_truncates_with_a_note(
    start: Start, model: ScriptedModelServer
) -> None:
    agent = await _three_long_parts(start, model)
    model.script(Error(500, "no summary today"), Text("done"))
    await agent.ask(f"hello there, part 3: {LONG}", "done")
    folded = _chat(bodies(model)[-1])[1][1]
    assert folded.startswith("[") and "earlier messages compacted: truncated" in folded
    assert "owner: hello there, part 0" in folded and "…" in folded


async def test_older_turns_arrive_as_archive_summaries(
    start: Start, model: ScriptedModelServer
) -> None:
    from orchestrator.memory.archive import ChunkPlan, commit_chunk, thread_of

    agent = await start(FETCH__MODEL__HISTORY_MESSAGES="2")
    for n in range(3):
        model.script(Text(f"answer {n}"))
        await agent.ask(f"hello there, question {n}", f"answer {n}")
    services = agent.services
    key = agent.terminal_key()
    rows = await services.store.messages.recent(key, 10)
    # Archive the first turn (as the archiver would, with a summary of it).
    first_turn = [{"id": i, "direction": d, "text": t, "ts": 0.0} for i, d, t in rows[:2]]
    plan = ChunkPlan(thread_of(key), 0, first_turn)
    assert (
        await services.memory.db.run(
            commit_chunk, plan, "SUMMARY: question 0 was asked", "x.json", None, "", False
        )
        is not None
    )
    model.script(Text("answer 3"))
    await agent.ask("hello there, question 3", "answer 3")
    chat = _chat(bodies(model)[-1])
    assert chat[1] == (
        "user",
        "[earlier in this chat, from archival memory]\n- SUMMARY: question 0 was asked",
    )
    assert chat[2:-1] == [
        ("user", "hello there, question 2"),
        ("assistant", "answer 2"),
        ("user", "hello there, question 3"),
    ]
