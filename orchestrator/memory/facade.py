"""What /remember, /memory and /forget say: the memory service's answers in phone words
(the instincts' ``Memory`` port, instincts/contract.py).

Bound to one subject (``of``): a member lists, searches, writes and forgets only their
own memories; what a member writes is never the owner's."""

from __future__ import annotations

import datetime as dt

from core.errors import FetchError
from orchestrator.memory.service import Memory


def _short(text: str, limit: int = 90) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _day(ts: float | None) -> str:
    return dt.datetime.fromtimestamp(ts or 0, dt.UTC).strftime("%d %b")


class MemoryFacade:
    def __init__(self, memory: Memory, subject: str = "owner") -> None:
        self._memory = memory
        self._subject = subject

    def of(self, subject: str) -> MemoryFacade:
        return MemoryFacade(self._memory, subject)

    async def remember(self, kind: str, text: str, tags: tuple[str, ...]) -> str:
        try:
            source = "owner" if self._subject == "owner" else f"member:{self._subject}"
            result = await self._memory.write(
                text, kind, tags, source=source, subject=self._subject
            )
        except FetchError as err:
            return f"❌ {err}"
        item = result.item
        if result.merged:
            return (
                f"🧠 Updated memory #{item.id} (it said nearly the same):\n"
                f"{_short(item.content, 200)}"
            )
        return f"🧠 Remembered #{item.id} ({item.kind}). /forget {item.id} undoes it."

    async def overview(self) -> str:
        try:
            counts, newest = await self._memory.overview(5, self._subject)
        except FetchError as err:
            return f"❌ {err}"
        archives = counts.pop("archive", 0)
        total = sum(counts.values())
        by_kind = ", ".join(f"{n} {k}" for k, n in sorted(counts.items())) or "none yet"
        lines = [
            f"🧠 {total} memories ({by_kind}) · {archives} archived conversation chunks",
            f"search: {self._memory.mode()}",
        ]
        if newest:
            lines.append("Newest:")
            lines += [f"  #{i.id} {i.kind}: {_short(i.content)}" for i in newest]
            lines.append(
                f"/forget <id> removes one (e.g. /forget {newest[0].id}) · /memory <words> searches"
            )
        else:
            lines.append("Teach me with /remember <fact>.")
        return "\n".join(lines)

    async def search(self, query: str) -> str:
        try:
            hits = await self._memory.search(query, 5, subject=self._subject)
        except FetchError as err:
            return f"❌ {err}"
        if not hits:
            return f"🧠 Nothing remembered about “{_short(query, 40)}”."
        lines = [f"🧠 {len(hits)} match(es):"]
        for hit in hits:
            item = hit.item
            if item.kind == "archive":
                lines.append(
                    f"  #{item.id} chat of {_day(item.started)}–{_day(item.ended)}: "
                    f"{_short(item.content)} ({hit.score:.2f})"
                )
            else:
                lines.append(f"  #{item.id} {item.kind}: {_short(item.content)} ({hit.score:.2f})")
        return "\n".join(lines)

    async def forget(self, item_id: int) -> str:
        try:
            forgetter = None if self._subject == "owner" else self._subject
            item = await self._memory.forget(item_id, forgetter)
        except FetchError as err:
            return f"❌ {err}"
        if item is None:
            return (
                f"No memory #{item_id} (archived conversations are kept). "
                "/memory lists what I remember."
            )
        return f"🗑 Forgot #{item.id}: {_short(item.content)}"
