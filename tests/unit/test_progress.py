"""Progress milestones: throttled, and edited in place where the channel can."""

from __future__ import annotations

from pathlib import Path

from channels.base import Capabilities
from core.events import Outbound, SendResult, SessionKey
from harnesses.base import HarnessEvent
from orchestrator.messenger import Messenger
from orchestrator.store import Journal, Store
from orchestrator.task.progress import Progress


class EditingChannel:
    name = "edit"
    capabilities = Capabilities(can_edit=True)

    def __init__(self) -> None:
        self.sent: list[Outbound] = []

    async def send(self, message: Outbound) -> SendResult:
        self.sent.append(message)
        return SendResult(message.edit_of or f"m{len(self.sent)}")


async def test_throttled_and_edited_in_place(tmp_path: Path) -> None:
    async with Store(tmp_path / "f.db") as store:
        journal = Journal(tmp_path)
        messenger = Messenger(store, journal)
        channel = EditingChannel()
        messenger.add_channel(channel)  # type: ignore[arg-type]
        progress = Progress(messenger, SessionKey("edit", "c"), "claude-code", interval=0.0)
        await progress.on_event(HarnessEvent("tool_use", "Read"))
        await progress.on_event(HarnessEvent("file_change", "/w/README.md"))
        await progress.on_event(HarnessEvent("text", "thinking"))  # not a milestone
        assert len(channel.sent) == 2
        assert channel.sent[0].edit_of is None and channel.sent[1].edit_of == "m1"
        assert "README.md" in channel.sent[1].text
        slow = Progress(messenger, SessionKey("edit", "c"), "x", interval=3600)
        for _ in range(50):
            await slow.on_event(HarnessEvent("tool_use", "Bash"))
        assert len(channel.sent) == 2  # nothing within the 20 s (here 1 h) window
        journal.close()
