"""Archive summaries through the openai SDK (the orchestrator's endpoint by default).

With no model configured a chunk still gets archived, with an extract (the first words
of each message) as its summary, so keyword search and ``memory_read`` keep working.
"""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING, Any

from core.errors import FetchError
from orchestrator.config import Settings

if TYPE_CHECKING:
    from openai import AsyncOpenAI

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
        self._client: AsyncOpenAI | None = None
        if model.base_url:
            from openai import AsyncOpenAI

            self._client = AsyncOpenAI(
                base_url=model.base_url,
                api_key=model.api_key or "not-needed",
                timeout=model.timeout_seconds,
                max_retries=1,
            )

    @property
    def configured(self) -> bool:
        return self._client is not None

    async def close(self) -> None:
        if self._client is not None:
            await self._client.close()

    async def summarize(self, messages: list[dict[str, Any]]) -> str:
        if self._client is None:
            return extract(messages)
        import openai

        text = transcript(messages)[-MAX_INPUT_CHARS:]
        try:
            response = await self._client.chat.completions.create(
                model=self.model,
                messages=[{"role": "system", "content": PROMPT}, {"role": "user", "content": text}],
            )
        except openai.APIError as err:
            raise SummaryError(f"summary model failed ({type(err).__name__})") from err
        content = response.choices[0].message.content if response.choices else None
        if not content or not content.strip():
            raise SummaryError("the summary model answered with nothing")
        return content.strip()
