"""The adapter's inbound queue in two lanes: the owner's events are handed over first.

Every event is handled in order within its lane, by one pump. Without lanes, an owner's
``/stop`` arriving behind a member's thousand messages waits until all of them were
normalised and handed to the gateway; with them it waits for the one being handled.
Connection events (disconnects, logouts) ride in the first lane too: they are rare and
must not wait behind traffic either.
"""

from __future__ import annotations

import asyncio
from collections import deque
from typing import Generic, TypeVar

T = TypeVar("T")


class Lanes(Generic[T]):
    def __init__(self) -> None:
        self._first: deque[T] = deque()
        self._rest: deque[T] = deque()
        self._ready = asyncio.Event()
        self._idle = asyncio.Event()
        self._idle.set()
        self._unfinished = 0

    def put(self, item: T, *, first: bool) -> None:
        (self._first if first else self._rest).append(item)
        self._unfinished += 1
        self._idle.clear()
        self._ready.set()

    async def get(self) -> T:
        while not (self._first or self._rest):
            self._ready.clear()
            await self._ready.wait()
        return self._first.popleft() if self._first else self._rest.popleft()

    def task_done(self) -> None:
        self._unfinished -= 1
        if self._unfinished <= 0:
            self._unfinished = 0
            self._idle.set()

    async def join(self) -> None:
        await self._idle.wait()

    def __len__(self) -> int:
        return len(self._first) + len(self._rest)
