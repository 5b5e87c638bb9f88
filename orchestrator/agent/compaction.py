"""Keeping one request under its token budget.

The oldest history messages are folded into ONE message until the rest fits (the
agent's history window, orchestrator/agent/window.py, does so a block at a time). With a
summariser (the orchestrator's model) that message is a summary; without one, or when
it fails, it is deterministic: each folded message truncated, and a note saying so.
Tokens are estimated at ~4 characters each (no tokenizer is needed for a budget).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

log = logging.getLogger(__name__)

Message = dict[str, Any]
Summarise = Callable[[list[Message]], Awaitable[str]]
PER_MESSAGE_CHARS = 6_000  # one huge message (a diff card) never crowds out the rest
FOLDED_LINE_CHARS = 120


def tokens(text: str) -> int:
    return len(text) // 4 + 1


def message_tokens(message: Message) -> int:
    return tokens(str(message.get("content") or "")) + 4


def clip(text: str, limit: int = PER_MESSAGE_CHARS) -> str:
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n[… {len(text) - limit} more characters cut]"


def truncation(folded: list[Message]) -> str:
    """The deterministic fold: the first words of each message, and a note."""
    lines = [f"[{len(folded)} earlier messages compacted: truncated, not summarised]"]
    for m in folded:
        who = "owner" if m["role"] == "user" else "fetch"
        text = " ".join(str(m.get("content") or "").split())
        cut = text if len(text) <= FOLDED_LINE_CHARS else text[:FOLDED_LINE_CHARS] + "…"
        lines.append(f"{who}: {cut}")
    return "\n".join(lines)


async def fold_text(folded: list[Message], cap: int, summarise: Summarise | None = None) -> str:
    """ONE message standing for ``folded`` in at most ``cap`` tokens: the summariser's
    summary, or the deterministic truncation without one (or when it fails)."""
    text = ""
    if summarise is not None:
        try:
            text = "[summary of earlier messages]\n" + (await summarise(folded)).strip()
        except Exception as err:  # the turn goes on with the deterministic fold
            log.warning("compaction: the summary failed (%s); truncating instead", err)
    if not text or tokens(text) > cap:
        text = truncation(folded)
        while tokens(text) > cap and "\n" in text:
            text = text[: text.rindex("\n")]  # the note line stays
    return text


async def compact(
    history: list[Message], budget: int, summarise: Summarise | None = None
) -> list[Message]:
    """``history`` (oldest first) fitted into ``budget`` tokens, folding as many of the
    oldest as needed, anew on every call (orchestrator/agent/window.py folds in blocks
    instead, so consecutive requests share their prefix; this is its one-shot form)."""
    if sum(message_tokens(m) for m in history) <= budget:
        return history
    keep = list(history)
    folded: list[Message] = []
    # Room for the folded message itself: a tenth of the budget.
    room = budget - budget // 10
    while keep and sum(message_tokens(m) for m in keep) > room:
        folded.append(keep.pop(0))
    return [{"role": "user", "content": await fold_text(folded, budget // 10, summarise)}, *keep]
