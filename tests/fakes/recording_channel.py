"""A phone channel whose sends are recorded (nothing leaves the machine)."""

from __future__ import annotations

from collections.abc import Callable

from channels.base import Capabilities
from core.events import Inbound, Outbound, SendResult


class RecordingChannel:
    """Records each send and answers it with the id ``<name>-out-<n>``; the gateway's
    sink is kept so a test can hand it inbound messages as the real adapter would."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.capabilities = Capabilities(can_react=True)
        self.sent: list[Outbound] = []
        self.sink: Callable[[Inbound], object] | None = None

    async def start(self, sink: Callable[[Inbound], object], spawner: object) -> None:
        self.sink = sink

    async def stop(self) -> None:
        self.sink = None

    async def send(self, message: Outbound) -> SendResult:
        self.sent.append(message)
        return SendResult(f"{self.name}-out-{len(self.sent)}")

    async def set_typing(self, chat: str, typing: bool) -> None:
        return None

    def health(self) -> str:
        return "recording"
