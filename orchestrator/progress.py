"""Milestones from a running harness, throttled so the phone is not flooded."""

from __future__ import annotations

import time

from harnesses.base import HarnessEvent
from orchestrator.events import SessionKey
from orchestrator.messenger import Messenger

INTERVAL_SECONDS = 20.0


class Progress:
    def __init__(
        self, messenger: Messenger, key: SessionKey, harness: str,
        interval: float = INTERVAL_SECONDS,
    ) -> None:
        self._messenger = messenger
        self._key = key
        self._harness = harness
        self._interval = interval
        self._last = time.monotonic()  # the "On it" message counts as the first
        self._steps = 0
        self._files: list[str] = []
        self._message_id: str | None = None  # the progress message, edited in place

    async def on_event(self, event: HarnessEvent) -> None:
        if event.kind == "tool_use":
            self._steps += 1
        elif event.kind == "file_change" and event.text:
            name = event.text.rsplit("/", 1)[-1]
            if name not in self._files:
                self._files.append(name)
        else:
            return
        now = time.monotonic()
        if now - self._last < self._interval:
            return
        self._last = now
        files = ", ".join(self._files[-3:]) or "no files yet"
        sent = await self._messenger.send(
            self._key, f"⏳ {self._harness}: {self._steps} step(s), edited: {files}",
            edit_of=self._message_id)
        self._message_id = self._message_id or sent.message_id or None
