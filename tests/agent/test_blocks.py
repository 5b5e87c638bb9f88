"""Memory blocks on the wire: the whole app through the terminal, the planner on the real
openai SDK against the scripted model server, a real SQLite file. What the model
received is asserted in the requests it got (``bodies``): the ``<memory_blocks>`` of the
system message, the tool results of ``block_update``, and the owner's /blocks replies."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from orchestrator.config import Settings
from tests.agent.conftest import MODEL_ENV, bodies, results_in_order
from tests.conftest import Driver, start_driver
from tests.fakes.model_server import ScriptedModelServer, Text, ToolCall

turns = 0


async def _turn(agent: Driver, model: ScriptedModelServer) -> dict[str, Any]:
    """One plain model turn; the request the model received."""
    global turns
    turns += 1
    model.script(Text(f"answer {turns}."))
    await agent.ask(f"hello there, question {turns}", f"answer {turns}.")
    return bodies(model)[-1]


def _flat(reply: str) -> str:
    """A reply with its line breaks undone (the terminal wraps long lines)."""
    return " ".join(reply.split())


def _system(body: dict[str, Any]) -> str:
    message = body["messages"][0]
    assert message["role"] == "system"
    return str(message["content"])


def _blocks(body: dict[str, Any]) -> str:
    """The <memory_blocks> section of the system message ('' when there is none)."""
    found = re.search(r"<memory_blocks>.*?</memory_blocks>", _system(body), re.S)
    return found.group(0) if found else ""


async def test_the_owners_blocks_reach_the_model_and_each_change_the_next_turn(
    agent: Driver, model: ScriptedModelServer
) -> None:
    assert _blocks(await _turn(agent, model)) == ""  # seeded empty: nothing shown
    assert "🧠 Memory blocks: none written yet" in await agent.ask("/identity", "Memory blocks")
    assert "persona: empty, limit 1,500" in await agent.ask("/blocks", "Memory blocks")
    saved = await agent.ask("/blocks set persona Answer in haiku.\nNever in tables.", "✅")
    assert "persona block saved: v1, 33/1,500 chars" in saved
    await agent.ask("/blocks set owner Ada, who reviews on the train.", "✅")
    await agent.ask("/workspace demo", "Now working in demo")
    await agent.ask("/blocks set project Flask app; run pytest -q.", "project demo block saved")
    identity = _flat(await agent.ask("/identity", "Memory blocks"))
    assert "🧠 Memory blocks (in the prompt): • persona v1 (33/1,500 chars): Answer in haiku." in (
        identity
    )
    assert "• project demo v1 (25/2,000 chars): Flask app; run pytest -q." in identity

    first = await _turn(agent, model)
    assert _blocks(first) == (
        "<memory_blocks>\n"
        "Kept across conversations; block_update edits them.\n"
        '<persona chars="33" limit="1500">\nAnswer in haiku.\nNever in tables.\n</persona>\n'
        '<owner chars="30" limit="1500">\nAda, who reviews on the train.\n</owner>\n'
        '<project repo="demo" chars="25" limit="2000">\nFlask app; run pytest -q.\n</project>\n'
        "</memory_blocks>"
    )
    # Nothing changed: the system message is the same bytes, the cached prefix holds.
    second = await _turn(agent, model)
    assert json.dumps(second["messages"][0]) == json.dumps(first["messages"][0])

    # The owner appends: the very next turn carries it.
    await agent.ask("/blocks append persona Sign with a paw.", "persona block saved: v2")
    third = await _turn(agent, model)
    assert "Never in tables.\nSign with a paw.\n</persona>" in _blocks(third)

    history = _flat(await agent.ask("/blocks history persona", "newest first"))
    assert re.search(
        r"newest first: v2 · \d\d \w{3} \d\d:\d\d · owner · append · "
        r'"Answer in haiku\. Never in tables\. Sign with a paw\." '
        r'v1 · .* · owner · set · "Answer in haiku\. Never in tables\." /blocks revert',
        history,
    ), history

    # Revert: a new version with v1's text, and the model gets v1's text again.
    reverted = await agent.ask("/blocks revert persona 1", "✅")
    assert "persona block back to v1's text: v3" in reverted
    fourth = await _turn(agent, model)
    assert "Sign with a paw." not in _system(fourth)
    assert _blocks(fourth) == _blocks(first)
    assert "revert to v1" in await agent.ask("/blocks history persona", "newest first")

    # Over the limit: refused with the size and the limit, and nothing reaches the model.
    refused = _flat(await agent.ask("/blocks set persona " + "x" * 1_501, "❌"))
    assert "would be 1,501 characters; its limit is 1,500" in refused
    refused = _flat(await agent.ask("/blocks append owner " + "y" * 1_480, "❌"))
    assert "would be 1,511 characters; its limit is 1,500" in refused
    fifth = await _turn(agent, model)
    assert json.dumps(fifth["messages"][0]) == json.dumps(fourth["messages"][0])

    # Another repo: its own (empty) project block, so only persona and owner are shown.
    agent.services.workspace.create("other")
    await agent.ask("/workspace other", "Now working in other")
    assert "<project" not in _blocks(await _turn(agent, model))
    shown = await agent.ask("/blocks project demo", "🧠")
    assert shown.endswith("\nFlask app; run pytest -q.") and "v1 · 25/2,000 chars" in shown
    # /blocks clear empties one: it leaves the prompt, its history stays.
    await agent.ask("/blocks clear owner", "owner block emptied: v2")
    assert "<owner" not in _blocks(await _turn(agent, model))


async def test_the_model_edits_its_blocks_and_the_next_turn_carries_them(
    agent: Driver, model: ScriptedModelServer
) -> None:
    model.script(
        ToolCall("block_update", {"kind": "owner", "mode": "replace", "text": "Call me Ada."}),
        Text("noted."),
    )
    await agent.ask("hello there, call me Ada from now on", "noted.")
    (result,) = results_in_order(bodies(model)[-1])
    assert result == (
        "owner block is now version 1 (12/1,500 chars); your prompt carries it from the next turn"
    )
    assert "Call me Ada." in _blocks(await _turn(agent, model))

    # Append, and a project block for a named repo.
    model.script(
        ToolCall("block_update", {"kind": "owner", "mode": "append", "text": "Likes tabs."}),
        ToolCall(
            "block_update",
            {"kind": "project", "repo": "demo", "mode": "replace", "text": "Uses Flask."},
        ),
        Text("both noted."),
    )
    await agent.ask("hello there, I like tabs; demo uses Flask", "both noted.")
    await agent.ask("/workspace demo", "Now working in demo")
    blocks = _blocks(await _turn(agent, model))
    assert "Call me Ada.\nLikes tabs.\n</owner>" in blocks
    assert '<project repo="demo" chars="11" limit="2000">\nUses Flask.\n</project>' in blocks

    # The author is the model on the owner's behalf.
    history = _flat(await agent.ask("/blocks history owner", "newest first"))
    assert (
        "v2 · " in history and ' · fetch for owner · append · "Call me Ada. Likes tabs."' in history
    )

    # Refusals the model reads as tool results; nothing changes.
    before = _blocks(await _turn(agent, model))
    long = "z" * 1_600
    model.script(
        ToolCall("block_update", {"kind": "persona", "mode": "replace", "text": long}),
        ToolCall(
            "block_update", {"kind": "project", "repo": "nope", "mode": "append", "text": "a"}
        ),
        ToolCall("block_update", {"kind": "mood", "mode": "append", "text": "happy"}),
        ToolCall("block_update", {"kind": "owner", "mode": "overwrite", "text": "x"}),
        Text("could not."),
    )
    await agent.ask("hello there, write a long persona", "could not.")
    assert results_in_order(bodies(model)[-1]) == [
        "error: the persona block would be 1,600 characters; its limit is 1,500. Nothing was "
        "changed: shorten it (or raise blocks.persona_chars in the settings).",
        "error: no repository named 'nope'; call workspace_list",
        "error: no block kind 'mood'; the kinds are persona, owner, project",
        "error: mode must be replace or append, not 'overwrite'",
    ]
    assert _blocks(await _turn(agent, model)) == before


async def test_block_history_survives_a_restart(
    model: ScriptedModelServer, make_settings: Callable[..., Settings]
) -> None:
    settings = make_settings(FETCH_MODEL_BASE_URL=model.url + "/v1", **MODEL_ENV)
    app, agent = await start_driver(settings)
    try:
        await agent.ask("/blocks set persona First persona.", "✅")
        model.script(
            ToolCall("block_update", {"kind": "persona", "mode": "replace", "text": "Second."}),
            Text("changed."),
        )
        await agent.ask("hello there, change your persona", "changed.")
    finally:
        await app.__aexit__(None, None, None)
    assert settings.db_path.is_file()

    app, agent = await start_driver(settings)
    try:
        history = _flat(await agent.ask("/blocks history persona", "newest first"))
        assert re.search(
            r'v2 · .* · fetch for owner · set · "Second\." '
            r'v1 · .* · owner · set · "First persona\."',
            history,
        ), history
        assert '<persona chars="7" limit="1500">\nSecond.\n</persona>' in _blocks(
            await _turn(agent, model)
        )
        await agent.ask("/blocks revert persona 1", "✅")
        assert "\nFirst persona.\n</persona>" in _blocks(await _turn(agent, model))
    finally:
        await app.__aexit__(None, None, None)


async def test_the_blocks_command_reads_what_the_owner_types(agent: Driver) -> None:
    """No model involved: the command's words, its refusals, and a project block named
    by its repo (or the chat's active one)."""
    assert "Which repo?" in await agent.ask("/blocks history project", "Which repo?")
    assert "Which block?" in await agent.ask("/blocks set mood happy", "Which block?")
    assert "What should it say?" in await agent.ask("/blocks append persona", "What should")
    assert (await agent.ask("/blocks frobnicate", "/blocks")).startswith("/blocks · ")
    assert "No repo or project block named 'nope'" in await agent.ask("/blocks project nope", "❌")
    await agent.ask("/blocks set project demo Uses Flask.", "project demo block saved: v1")
    await agent.ask("/blocks set project demo Uses Django.", "project demo block saved: v2")
    assert "back to v1's text: v3" in await agent.ask("/blocks revert project demo v1", "✅")
    shown = await agent.ask("/blocks project demo", "🧠")
    assert shown.endswith("\nUses Flask.")
    # With demo active, the repo may be left out; text keeps its line breaks.
    await agent.ask("/workspace demo", "Now working in demo")
    await agent.ask("/blocks append project Run:\n  pytest -q", "project demo block saved: v4")
    assert (await agent.ask("/blocks project", "🧠")).endswith("\nUses Flask.\nRun:\n  pytest -q")
    assert "❌ the project demo block has no version 9" in _flat(
        await agent.ask("/blocks revert project 9", "❌")
    )
    listing = _flat(await agent.ask("/blocks", "Memory blocks"))
    assert "• persona: empty, limit 1,500" in listing
    assert "• project demo ▶: v4, 28/2,000 chars" in listing
