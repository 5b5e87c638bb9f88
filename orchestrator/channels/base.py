"""The channel port. Adapters normalise at the boundary and declare what they can do."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Protocol

from orchestrator.events import Inbound, Outbound, SendResult

InboundSink = Callable[[Inbound], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class Capabilities:
    max_message_chars: int = 4000
    can_edit: bool = False
    markup: str = "plain"  # plain | whatsapp | markdown


class Channel(Protocol):
    name: str
    capabilities: Capabilities

    async def start(self, sink: InboundSink) -> None:
        """Begin delivering inbound messages to ``sink``."""

    async def stop(self) -> None: ...

    async def send(self, message: Outbound) -> SendResult: ...
