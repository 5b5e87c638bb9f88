"""The channel port. Adapters normalise at the boundary and declare what they can do."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Protocol

from core.events import Inbound, Outbound, SendResult

InboundSink = Callable[[Inbound], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class Capabilities:
    max_message_chars: int = 4000
    can_edit: bool = False
    markup: str = "plain"  # plain | whatsapp | markdown | json
    can_react: bool = False  # inbound reactions (👍/👎) can answer approvals
    typing: bool = False  # has a typing indicator (``set_typing``)
    # Pacing for channels that punish bulk senders (WhatsApp): 0 = none.
    min_send_interval: float = 0.0
    sends_per_minute: int = 0
    # Only ever write to chats that wrote first (WhatsApp's ban rules).
    reply_only: bool = False


class Channel(Protocol):
    name: str
    capabilities: Capabilities

    async def start(self, sink: InboundSink) -> None:
        """Begin delivering inbound messages to ``sink``."""

    async def stop(self) -> None: ...

    async def send(self, message: Outbound) -> SendResult:
        """Send (or, with ``message.edit_of``, edit in place where ``can_edit``)."""

    async def set_typing(self, chat: str, typing: bool) -> None:
        """Show or clear a typing indicator; a no-op where the channel has none."""

    def health(self) -> str:
        """One line for /status: connected? last traffic? why not?"""
