"""What the web chat has said, kept per chat for the page's event stream.

Every reply gets the next number of one counter (the SSE event id). A page that
reconnects sends the last id it saw (``Last-Event-ID``) and gets everything after it,
so a dropped connection loses nothing while the reply is still kept. The keep is
bounded (the oldest go first); a page that was away longer than that is told how many
it missed, never silently given a hole.

Ids start at the clock in milliseconds, not at 1: after a restart (the keep is in memory
and starts empty) a page's old ``Last-Event-ID`` is below every new id, so it gets all
that was said since, and a message id (``web-<id>``) is never reused across restarts.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass


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
