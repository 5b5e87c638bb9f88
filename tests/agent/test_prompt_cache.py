"""Issue 26.4: a long conversation keeps a provider's prompt cache warm. 200 turns through
the whole app (terminal channel, the planner on the real openai SDK, the scripted model
server on 127.0.0.1, real SQLite, archival memory archiving in the background), messages
sized so that both the message limit and the token budget bind: at least 80% of
consecutive requests have the previous request (minus its trailing session note) as a
byte prefix of their serialized messages, and the summariser is asked at most once per
block the window folded.

Then a unit check of the window alone: the same history folds to the same bytes, a
restart (the state read back from its JSON) continues the same window, and /clear's new
conversation starts a fresh one."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from itertools import pairwise
from typing import Any

from orchestrator.agent.window import Row, WindowState, fit
from orchestrator.planner import SUMMARY_PROMPT
from tests.conftest import Driver
from tests.fakes.model_server import ScriptedModelServer, Text

TURNS = 200


def _serialized(messages: list[dict[str, Any]]) -> str:
    return json.dumps(messages, ensure_ascii=False, separators=(",", ":"))


def _prefix_kept(before: list[dict[str, Any]], after: list[dict[str, Any]]) -> bool:
    """``before`` minus its last message (the session note), serialized, is a byte prefix
    of ``after`` serialized (the closing bracket aside)."""
    head = _serialized(before[:-1])[:-1]
    return _serialized(after).startswith(head)


async def test_200_turns_keep_the_prefix_and_summarise_once_per_block(
    start: Callable[..., Awaitable[Driver]], model: ScriptedModelServer
) -> None:
    # ~500 tokens a question, ~100 an answer: the 12,000-token context holds ~13 turns,
    # the 30-message limit 15: the two limits take turns, the harder case. Archival memory
    # archives as it goes (its summaries are read again only when the window moves).
    agent = await start(FETCH__MODEL__CONTEXT_TOKENS="12000", FETCH__MEMORY__ARCHIVE_TOKENS="3000")
    model.default = Text("noted: " + "the answer goes on " * 20)
    for n in range(TURNS):
        await agent.ask(f"part {n}: " + f"lorem ipsum {n} dolor sit amet " * 64, "noted")
    sent = [r.body for r in model.requests if r.dialect == "openai_chat" and r.body]
    turns = [b["messages"] for b in sent if "tools" in b]
    summaries = [
        b for b in sent if "tools" not in b and b["messages"][0]["content"] == SUMMARY_PROMPT
    ]
    assert len(turns) == TURNS
    kept = sum(_prefix_kept(a, b) for a, b in pairwise(turns))
    ratio = kept / (TURNS - 1)
    assert ratio >= 0.8, f"{kept} of {TURNS - 1} consecutive requests kept the prefix"
    session = await agent.services.sessions.get(agent.terminal_key())
    window = WindowState.load(session.data.history_window, window_since(session.data))
    assert window.folded >= 5  # the token budget did bind: blocks were folded
    assert 0 < len(summaries) <= window.folded
    # Every request stays inside the budget it was built for (4 characters a token).
    assert max(len(_serialized(m)) for m in turns) < 12_000 * 4
    # A rebase is the only turn whose prefix changes.
    assert TURNS - 1 - kept <= window.rebased


def window_since(data: Any) -> int:
    return int(data.frozen_prompt.get("since", "0"))


def _rows(first: int, n: int, size: int) -> list[Row]:
    return [
        (
            i,
            {"role": "user" if i % 2 == 0 else "assistant", "content": f"m{i} " + "x" * size},
        )
        for i in range(first, first + n)
    ]


async def test_the_window_rebases_in_blocks_and_survives_a_restart() -> None:
    calls: list[int] = []

    async def summarise(folded: list[dict[str, Any]]) -> str:
        calls.append(len(folded))
        return f"summary of {len(folded)}"

    state = WindowState(since=1)
    shown: list[list[dict[str, Any]]] = []
    rebases = 0
    for last in range(2, 80, 2):  # a turn adds two messages
        rows = [r for r in _rows(1, last, 400) if r[0] >= state.start][-(30 + 1) :]
        restored = WindowState.load(json.loads(json.dumps(state.dump())), 1)
        assert restored == state  # what a restart reads back is the same window
        history, rebased = await fit(state, rows, 30, 2_000, summarise)
        rebases += rebased
        shown.append(history)
    # ~100 tokens a message, room for ~18: folds happen, each one summary call.
    assert calls and len(calls) == state.folded
    assert rebases == state.rebased and rebases <= len(shown) // 3
    assert str(shown[-1][0]["content"]).startswith("[summary of earlier messages]\nsummary of")
    # /clear: another conversation's window is a fresh one.
    assert WindowState.load(state.dump(), 99) == WindowState(since=99)
    assert WindowState.load({"since": "bad"}, 1) == WindowState(since=1)
