"""The words around a search's match in a message, for the sessions list: data only
(before, match, after), which the template escapes and marks. Controls and bidi
characters are spelled out as everywhere else (``diffview.visible``)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from orchestrator.task.diffview import visible

AROUND = 60  # characters kept on each side of the match
_SPACE = re.compile(r"\s+")


@dataclass(frozen=True, slots=True)
class Snippet:
    before: str
    match: str
    after: str


def snippet(text: str, query: str, around: int = AROUND) -> Snippet | None:
    """``None`` when ``query`` is not in ``text`` (case-insensitive)."""
    flat = _SPACE.sub(" ", text).strip()
    needle = _SPACE.sub(" ", query).strip()
    if not needle:
        return None
    found = re.search(re.escape(needle), flat, re.IGNORECASE)
    if found is None:
        return None
    start, end = found.span()
    before = flat[max(0, start - around) : start]
    after = flat[end : end + around]
    return Snippet(
        ("…" if start > around else "") + visible(before),
        visible(flat[start:end]),
        visible(after) + ("…" if end + around < len(flat) else ""),
    )


__all__ = ["AROUND", "Snippet", "snippet"]
