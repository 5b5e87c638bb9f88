"""Archive summaries through the openai SDK (the orchestrator's endpoint by default).

With no model configured a chunk still gets archived, with an extract (the first words
of each message) as its summary, so keyword search and ``memory_read`` keep working.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import Any

from core.errors import FetchError
from orchestrator.config import Settings
from orchestrator.providers.chain import Attempt, ChainFailed, ProviderChain

PROMPT = (
    "You archive a chat between a developer (the owner) and Fetch, their coding assistant. "
    "Summarize this part of it for long-term memory in at most 150 words: decisions made, "
    "the owner's preferences, facts about their projects, commands or fixes that worked, "
    "open questions. Plain sentences, no preamble. Keep names, file paths and commands "
    "exact, since the summary is searched by keyword."
)
MAX_INPUT_CHARS = 120_000  # a chunk is ~12.5k tokens by default; this is a hard stop


class SummaryError(FetchError):
    pass


def transcript(messages: list[dict[str, Any]]) -> str:
    lines = []
    for m in messages:
        when = dt.datetime.fromtimestamp(float(m["ts"]), dt.UTC).strftime("%Y-%m-%d %H:%M")
        who = {"in": "owner", "out": "fetch"}.get(str(m["direction"]), str(m["direction"]))
        lines.append(f"[{when}] {who}: {m['text']}")
    return "\n".join(lines)


def extract(messages: list[dict[str, Any]], limit: int = 600) -> str:
    parts: list[str] = []
    for m in messages:
        words = " ".join(str(m["text"]).split()[:20])
        if words:
            parts.append(words)
        if sum(len(p) for p in parts) > limit:
            break
    return "(extract, no model configured) " + " · ".join(parts)[:limit]


class Summarizer:
    def __init__(self, settings: Settings) -> None:
        model = settings.model
        self.model = settings.memory.summary_model or model.name
        # The orchestrator's endpoints, with their fallback and retry policy
        # (orchestrator/providers/); the SDK is imported only when a summary is asked.
        self._chain: ProviderChain | None = ProviderChain(model) if model.configured else None
        self._asked = settings.memory.summary_model  # None: each endpoint's own model
        self.record: Callable[[Attempt], None] | None = None  # the cost ledger

    @property
    def configured(self) -> bool:
        return self._chain is not None

    async def close(self) -> None:
        if self._chain is not None:
            await self._chain.close()

    async def summarize(self, messages: list[dict[str, Any]]) -> str:
        if self._chain is None:
            return extract(messages)
        text = transcript(messages)[-MAX_INPUT_CHARS:]
        try:
            response, _ = await self._chain.complete(
                [{"role": "system", "content": PROMPT}, {"role": "user", "content": text}],
                model=self._asked,
                on_attempt=self.record,
            )
        except ChainFailed as err:
            raise SummaryError(f"summary model failed: {err}") from err
        content = response.choices[0].message.content if response.choices else None
        if not content or not content.strip():
            raise SummaryError("the summary model answered with nothing")
        return str(content).strip()
