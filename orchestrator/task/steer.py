"""Steering a running task: the owner's messages written to a CLI that reads its stdin
while it runs (``Harness.steerable``, in a kennel that passes stdin on).

A run that will be steerable has its ``Steering`` from the start: what comes while the
kennel, the setup or the layer are still being made waits here and is written right
after the prompt, the first message, once the CLI runs (``attach``). The CLI says when it
has taken each one (an ``input`` event); at the end of a turn (``done``/``error``) with
every message taken, stdin is closed and the CLI ends. A message it has not taken yet
keeps stdin open: the CLI reads it as a turn of its own. Once stdin is closed, ``send``
says no and the gateway keeps the message for after the task (orchestrator/gateway.py);
what was written but never taken is said back (``untaken``). Nothing is dropped unsaid.
"""

from __future__ import annotations

from harnesses.base import Harness, HarnessEvent
from kennel.base import KennelProcess


class Steering:
    def __init__(self, harness: Harness) -> None:
        self._harness = harness
        self._proc: KennelProcess | None = None
        self._waiting: list[str] = []  # sent before the CLI ran
        self._sent: list[str] = []  # written to the CLI: the prompt first
        self._taken = 0
        self._open = True

    @property
    def open(self) -> bool:
        return self._open

    @property
    def attached(self) -> bool:
        return self._proc is not None

    async def attach(self, proc: KennelProcess, prompt: str) -> None:
        """The CLI runs: its prompt, then what waited, in order."""
        self._proc = proc
        waiting, self._waiting = self._waiting, []
        for i, text in enumerate((prompt, *waiting)):
            if not await self._write(text):
                # The CLI is gone already: the rest was never written (``untaken``).
                self._waiting = waiting[max(i - 1, 0) :]
                return

    async def send(self, text: str) -> bool:
        """Write one message to the CLI (or keep it until it runs); False when it no
        longer reads any (then the caller keeps it for after the task)."""
        if not self._open:
            return False
        if self._proc is None:
            self._waiting.append(text)
            return True
        return await self._write(text)

    async def _write(self, text: str) -> bool:
        assert self._proc is not None
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
            if self._proc is not None:
                self._proc.close_input()

    def untaken(self) -> list[str]:
        """The owner's messages the CLI never took (it ended first, or never ran); the
        first message written is the task's prompt, never one of them."""
        return self._sent[max(self._taken, 1) :] + self._waiting
