"""What the web chat has said, kept per chat for the page's event stream.

Every reply gets the next number of one counter (the SSE event id). A page that
reconnects sends the last id it saw (``Last-Event-ID``) and gets everything after it,
so a dropped connection loses nothing while the reply is still kept. The keep is
bounded (the oldest go first); a page that was away longer than that is told how many
it missed, never silently given a hole.

Ids start at the clock in milliseconds, not at 1, or past the newest kept one: a page's
old ``Last-Event-ID`` is below every new id, so it gets all that was said since, and a
message id (``web-<id>``) is never reused across restarts.

The keep is durable when the application gives it a ``Keep`` (Fetch's is the durable
outbox in SQLite): every event is written there as it is put, and ``restore`` reads
them back at start, so a reply that came while no page was open, or just before a
restart, is still delivered.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, fields
from typing import Protocol


@dataclass(frozen=True, slots=True)
class Event:
    id: int
    # "message": a reply; "edit": replaces message ``edit_of``; "owner": what the owner
    # sent (so a reloaded page shows both sides)
    kind: str
    message_id: str
    text: str
    reply_to: str | None
    edit_of: str | None
    # The approval this diff asks for: its buttons answer exactly that one.
    nonce: str | None
    time: float

    def as_json(self) -> dict[str, object]:
        return {
            "id": self.id,
            "kind": self.kind,
            "message_id": self.message_id,
            "text": self.text,
            "reply_to": self.reply_to,
            "edit_of": self.edit_of,
            "nonce": self.nonce,
            "time": self.time,
        }


class Keep(Protocol):
    """Where the events outlive the process (the application's store)."""

    async def add(self, chat: str, event: dict[str, object]) -> None: ...

    async def load(self) -> list[tuple[str, dict[str, object]]]:
        """(chat, event) of every kept event, oldest first."""
        ...


_EVENT_FIELDS = frozenset(f.name for f in fields(Event))


@dataclass(frozen=True, slots=True)
class Since:
    events: list[Event]
    gap: bool  # the keep no longer has some events between the page's last id and these


class Outbox:
    def __init__(self, size: int, clock: Callable[[], float] = time.time) -> None:
        self._size = size
        self._clock = clock
        self._boxes: dict[str, deque[Event]] = {}
        self._last = int(clock() * 1000)
        self._changed = asyncio.Condition()
        self.keep: Keep | None = None
        self._restored = False

    async def restore(self) -> int:
        """Read the kept events back (once, at the first start); how many."""
        if self.keep is None or self._restored:
            return 0
        self._restored = True
        count = 0
        for chat, data in await self.keep.load():
            if set(data) != _EVENT_FIELDS:
                continue  # written by another version: not worth failing the page for
            event = Event(**data)  # type: ignore[arg-type]
            self._boxes.setdefault(chat, deque(maxlen=self._size)).append(event)
            self._last = max(self._last, event.id)
            count += 1
        return count

    @property
    def last_id(self) -> int:
        return self._last

    async def put(
        self,
        chat: str,
        text: str,
        *,
        reply_to: str | None = None,
        edit_of: str | None = None,
        nonce: str | None = None,
        owner: bool = False,
    ) -> Event:
        self._last += 1
        event = Event(
            id=self._last,
            kind="owner" if owner else "edit" if edit_of else "message",
            message_id=edit_of or f"web-{self._last}",
            text=text,
            reply_to=reply_to,
            edit_of=edit_of,
            nonce=nonce,
            time=self._clock(),
        )
        if self.keep is not None:  # kept first: a page is never shown what is not kept
            await self.keep.add(chat, event.as_json())
        self._boxes.setdefault(chat, deque(maxlen=self._size)).append(event)
        async with self._changed:
            self._changed.notify_all()
        return event

    def since(self, chat: str, last_id: int) -> Since:
        box = self._boxes.get(chat) or deque()
        events = [e for e in box if e.id > last_id]
        # Ids are shared by all chats, so a gap is only known for sure within this chat's
        # keep: it is full and its oldest is newer than what the page last saw.
        gap = bool(box) and len(box) == self._size and last_id < box[0].id - 1
        return Since(events, gap)

    async def changed(self) -> None:
        """Until something is put (any chat) or ``wake`` is called."""
        async with self._changed:
            await self._changed.wait()

    async def wake(self) -> None:
        async with self._changed:
            self._changed.notify_all()
