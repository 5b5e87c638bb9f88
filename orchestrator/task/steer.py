"""Steering a running task: the owner's messages written to a CLI that reads its stdin
while it runs (``Harness.steerable``, in a kennel that passes stdin on).

The prompt is the first message. The CLI says when it has taken each one (an ``input``
event); at the end of a turn (``done``/``error``) with every message taken, stdin is
closed and the CLI ends. A message it has not taken yet keeps stdin open: the CLI reads
it as a turn of its own. Once stdin is closed, ``send`` says no and the gateway keeps the
message for after the task (orchestrator/gateway.py), so nothing is ever dropped.
"""

from __future__ import annotations

from harnesses.base import Harness, HarnessEvent
from kennel.base import KennelProcess


class Steering:
    def __init__(self, proc: KennelProcess, harness: Harness) -> None:
        self._proc = proc
        self._harness = harness
        self._sent: list[str] = []
        self._taken = 0
        self._open = True

    @property
    def open(self) -> bool:
        return self._open

    async def send(self, text: str) -> bool:
        """Write one message to the CLI; False when it no longer reads any (then the
        caller keeps it for after the task)."""
        if not self._open:
            return False
        # Counted before the write: a turn that ends while the write drains must not
        # close stdin under a message the CLI will still read.
        self._sent.append(text)
        if await self._proc.write_input(self._harness.input_line(text)):
            return True
        self._sent.pop()
        self._open = False
        return False

    def on_event(self, event: HarnessEvent) -> None:
        if event.kind == "input":
            self._taken += 1
        elif event.kind in ("done", "error") and self._taken >= len(self._sent):
            self.close()

    def close(self) -> None:
        if self._open:
            self._open = False
            self._proc.close_input()

    def untaken(self) -> list[str]:
        """The owner's messages written that the CLI never took (it ended first); the
        first message written is the task's prompt, never one of them."""
        return self._sent[max(self._taken, 1) :]
