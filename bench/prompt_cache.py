"""Benchmark: how much of each model request a provider's prompt cache can reuse over a
long conversation, and how many summary calls the history costs (issue 26.4).

A request "hits" when the previous request of the conversation, minus its trailing
session note, is a byte prefix of it (serialized messages): then a provider's prompt
cache reuses everything but the newest turn. Two measurements in one run:

* **window vs sliding (baseline)**: the same synthetic conversation (questions of ~500
  tokens, answers of ~100, so both the 30-message limit and the token budget bind) fed
  turn by turn to today's history window (orchestrator/agent/window.py: trimmed and folded
  in blocks) and to the old behaviour (the newest 30 messages, then
  ``compaction.compact``: once the window is full the oldest drops every turn, and once
  the budget binds every turn folds anew). Summaries are counted as the planner pays for
  them: one call per distinct folded transcript (it caches the rest).
* **the app**: the same conversation through the whole app (terminal channel, the
  planner on the real openai SDK, the scripted model server on 127.0.0.1): the hit ratio
  of the requests as the server received them, and the summary requests it got.

N is the number of turns (200; ``--quick`` 100). Figures are per 100 turns.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import sys
from itertools import pairwise
from typing import Any

from bench._common import fresh_dirs, table

LIMIT = 30  # model.history_messages' default
CONTEXT = 12_000  # model.context_tokens for this run: the budget binds, as in long chats
BUDGET = 8_600  # what the history gets of CONTEXT beside the prompt, tools and reserve
NOTE = {"role": "user", "content": "[session mode: ALERT · repos: demo]"}
SYSTEM = {"role": "system", "content": "You are Fetch."}


def _question(n: int) -> str:
    return f"part {n}: " + f"lorem ipsum {n} dolor sit amet " * 64


ANSWER = "noted: " + "the answer goes on " * 20


def _hits(requests: list[list[dict[str, Any]]]) -> int:
    def text(messages: list[dict[str, Any]]) -> str:
        return json.dumps(messages, ensure_ascii=False, separators=(",", ":"))

    return sum(text(b).startswith(text(a[:-1])[:-1]) for a, b in pairwise(requests))


class _Summaries:
    """The planner's summariser as far as cost goes: a call per transcript not seen."""

    def __init__(self) -> None:
        self.seen: set[str] = set()
        self.calls = 0

    async def __call__(self, folded: list[dict[str, Any]]) -> str:
        key = hashlib.sha256(json.dumps(folded).encode()).hexdigest()
        if key not in self.seen:
            self.seen.add(key)
            self.calls += 1
        return f"summary {key[:12]}: the owner sent long lorem ipsum parts"


async def _simulate(turns: int, blocks: bool) -> dict[str, float]:
    from orchestrator.agent.compaction import compact
    from orchestrator.agent.window import WindowState, fit

    summaries = _Summaries()
    state = WindowState(since=1)
    log: list[tuple[int, dict[str, Any]]] = []
    requests: list[list[dict[str, Any]]] = []
    for n in range(turns):
        if blocks:
            rows = [r for r in log if r[0] >= state.start][-(LIMIT + 1) :]
            history, _ = await fit(state, rows, LIMIT, BUDGET, summaries)
        else:
            history = await compact([m for _i, m in log[-LIMIT:]], BUDGET, summaries)
        question = {"role": "user", "content": _question(n)}
        requests.append([SYSTEM, *history, question, NOTE])
        log += [(2 * n + 1, question), (2 * n + 2, {"role": "assistant", "content": ANSWER})]
    figures = {
        "hit_ratio": _hits(requests) / max(1, turns - 1),
        "summary_calls_per_100_turns": summaries.calls * 100 / turns,
    }
    if blocks:
        figures["rebases_per_100_turns"] = state.rebased * 100 / turns
    return figures


async def _app(turns: int) -> dict[str, float]:
    from bench._common import model_env
    from channels.terminal import TerminalChannel
    from orchestrator.app import build_app
    from orchestrator.config import load_settings
    from orchestrator.planner import SUMMARY_PROMPT
    from tests.fakes.model_server import ScriptedModelServer, Text

    with fresh_dirs("prompt-cache") as (home, workspace):
        async with ScriptedModelServer(default=Text(ANSWER)) as model:
            env = model_env(home, workspace, model.url)
            env.update(FETCH__MODEL__CONTEXT_TOKENS=str(CONTEXT), FETCH__MEMORY__ENABLED="false")
            settings = load_settings(None, env)
            terminal = TerminalChannel(settings.terminal.chat)
            app = build_app(settings, channels=[terminal])
            await app.__aenter__()
            try:
                for n in range(turns):
                    await terminal.submit(_question(n))
                    while "noted" not in (await asyncio.wait_for(terminal.outbox.get(), 30)).text:
                        pass
            finally:
                await app.__aexit__(None, None, None)
            sent = [r.body for r in model.requests if r.dialect == "openai_chat" and r.body]
    requests = [b["messages"] for b in sent if "tools" in b]
    summaries = [b for b in sent if b["messages"][0]["content"] == SUMMARY_PROMPT]
    return {
        "hit_ratio": _hits(requests) / max(1, len(requests) - 1),
        "summary_calls_per_100_turns": len(summaries) * 100 / turns,
    }


def run(n: int) -> dict[str, Any]:
    turns = max(2, n)
    return {
        "turns": turns,
        "window": asyncio.run(_simulate(turns, blocks=True)),
        "baseline": asyncio.run(_simulate(turns, blocks=False)),
        "app": asyncio.run(_app(turns)),
    }


def render(result: dict[str, Any]) -> str:
    rows = [
        [
            name,
            f"{result[key]['hit_ratio'] * 100:.1f}%",
            result[key]["summary_calls_per_100_turns"],
        ]
        for name, key in (
            ("window in blocks (now)", "window"),
            ("base: sliding window", "baseline"),
            ("the app on the wire (now)", "app"),
        )
    ]
    hit = result["app"]["hit_ratio"]
    verdict = "PASS" if hit >= 0.8 else "MISS"
    return (
        table(
            f"Prompt cache over {result['turns']} turns (prefix hits; summaries per 100 turns)",
            ["history", "prefix hits", "summaries/100"],
            rows,
        )
        + f"\n{verdict}: at least 80% of requests keep the previous one as a prefix "
        f"(the app: {hit * 100:.1f}%)"
    )


if __name__ == "__main__":
    print(render(run(int(sys.argv[1]) if len(sys.argv) > 1 else 200)))
