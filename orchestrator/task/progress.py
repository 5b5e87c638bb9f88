"""Progress as a short checklist on the phone, updated at milestones.

    ⏳ Task #3 · demo · claude-code
    ✅ started
    ⏳ coding: 4 steps · README.md
    ⬚ your review
    ⬚ commit

The first checklist is sent when the task starts; later milestones edit it in place
where the channel can, otherwise a new one is sent — at most one per ``interval``
(20 s) while the harness works, so the phone is not flooded.
"""

from __future__ import annotations

import re
import time

from core.events import SessionKey
from harnesses.base import HarnessEvent
from orchestrator.messenger import Messenger

INTERVAL_SECONDS = 20.0
TEST_COMMAND = re.compile(
    r"\b(pytest|py\.test|python -m (?:pytest|unittest)|npm (?:run )?test|yarn test|pnpm test"
    r"|go test|cargo test|mvn test|gradle test|jest|vitest|rspec|phpunit|tox|nox|make test"
    r"|ctest|mix test|dotnet test)\b"
)


def _command_of(event: HarnessEvent) -> str:
    data = event.data.get("input")
    if isinstance(data, dict):
        for key in ("command", "cmd"):
            if isinstance(data.get(key), str):
                return str(data[key])
    return event.text if event.kind == "tool_use" else ""


class Progress:
    def __init__(
        self,
        messenger: Messenger,
        key: SessionKey,
        harness: str,
        interval: float = INTERVAL_SECONDS,
        *,
        title: str = "",
        message_id: str | None = None,
        after: tuple[str, str] = ("your review (yes/no)", "commit"),
    ) -> None:
        self._messenger = messenger
        self._key = key
        self._harness = harness
        self._interval = interval
        self._title = title or f"Task · {harness}"
        self._last = time.monotonic()  # the starting checklist counts as the first
        self._steps = 0
        self._files: list[str] = []
        self.tests: list[str] = []  # test commands the harness ran
        self._message_id = message_id  # the checklist, edited in place
        # The two steps after coding: a task's review and commit; /improve's own.
        self._after = after

    def attach(self, message_id: str) -> None:
        """The checklist message to edit from now on."""
        self._message_id = message_id or None

    def render(self, stage: str) -> str:
        """The checklist at ``stage``: coding | review | done | failed."""
        files = " · " + ", ".join(self._files[-3:]) if self._files else ""
        work = f"coding: {self._steps} step{'s' if self._steps != 1 else ''}{files}"
        if self.tests:
            work += f" · ran {len(self.tests)} test command(s)"
        marks = {
            "coding": ("⏳", "⬚", "⬚"),
            "review": ("✅", "⏳", "⬚"),
            "done": ("✅", "✅", "✅"),
            "rejected": ("✅", "❌", "⬚"),
            "failed": ("❌", "⬚", "⬚"),
        }[stage]
        return "\n".join(
            [
                f"{'⏳' if stage == 'coding' else '📋'} {self._title}",
                "✅ started",
                f"{marks[0]} {work}",
                f"{marks[1]} {self._after[0]}",
                f"{marks[2]} {self._after[1]}",
            ]
            + (["/stop to cancel"] if stage == "coding" else [])
        )

    async def on_event(self, event: HarnessEvent) -> None:
        if event.kind == "tool_use":
            self._steps += 1
            command = _command_of(event)
            if command and TEST_COMMAND.search(command):
                self.tests.append(command[:120])
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
        await self._show("coding")

    def answer_marks(self) -> dict[str, str]:
        """What the checklist becomes once the owner answers the diff (kept with the
        session: the answer may come after a restart): its message, and its text after
        a yes (``done``) or a no (``rejected``). Empty where it cannot be edited."""
        channel = self._messenger.channel(self._key.channel)
        if not self._message_id or not channel.capabilities.can_edit:
            return {}
        return {
            "id": self._message_id,
            "done": self.render("done"),
            "rejected": self.render("rejected"),
        }

    async def finish(self, stage: str) -> None:
        """The last update (review or failed), only where the checklist can be edited:
        elsewhere the diff or the failure message that follows says it all."""
        channel = self._messenger.channel(self._key.channel)
        if self._message_id and channel.capabilities.can_edit:
            await self._show(stage)

    async def _show(self, stage: str) -> None:
        sent = await self._messenger.send(self._key, self.render(stage), edit_of=self._message_id)
        self._message_id = self._message_id or sent.message_id or None
