"""The channel port. Adapters normalise at the boundary and declare what they can do."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from core.events import Inbound, Outbound, OutboundFile, SendResult
from core.tasks import Spawner
from core.text import Measure

InboundSink = Callable[[Inbound], Awaitable[None]]


def as_is(text: str) -> str:
    return text


@dataclass(frozen=True, slots=True)
class Capabilities:
    # One message's size as ``measure`` counts it (Telegram: UTF-16 code units). The
    # messenger cuts every reply to it (core.text.split_message); channels never split.
    message_limit: int = 4000
    measure: Measure = len
    # The core's Markdown -> the channel's own markup, applied before the cut when that
    # markup still marks code with ``` fences (WhatsApp); a channel whose wire format
    # cannot be cut (Telegram's HTML) renders each message in ``send`` instead.
    render: Callable[[str], str] = as_is
    can_edit: bool = False
    markup: str = "plain"  # plain | whatsapp | markdown | json
    can_react: bool = False  # inbound reactions (👍/👎) can answer approvals
    typing: bool = False  # has a typing indicator (``set_typing``)
    # Pacing for channels that punish bulk senders (WhatsApp): 0 = none.
    min_send_interval: float = 0.0
    sends_per_minute: int = 0
    # Only ever write to chats that wrote first (WhatsApp's ban rules).
    reply_only: bool = False
    # Files sent (/send): the biggest document and image the channel takes, in bytes;
    # 0: it sends no files (the channel then need not implement ``FileSender``).
    file_limit: int = 0
    image_limit: int = 0


class Channel(Protocol):
    name: str
    capabilities: Capabilities

    async def start(self, sink: InboundSink, spawner: Spawner) -> None:
        """Begin delivering inbound messages to ``sink``. Every background task the
        channel needs is started through ``spawner`` (the application's supervisor)."""

    async def stop(self) -> None:
        """Undo ``start``: cancel and await every task it spawned, in reverse order."""

    async def send(self, message: Outbound) -> SendResult:
        """Send one message (already cut to ``message_limit`` and ``render``ed by the
        messenger), or with ``message.edit_of`` edit in place where ``can_edit``."""

    async def set_typing(self, chat: str, typing: bool) -> None:
        """Show or clear a typing indicator; a no-op where the channel has none."""

    def health(self) -> str:
        """One line for /status: connected? last traffic? why not?"""


@runtime_checkable
class FileSender(Protocol):
    """A channel that can send a file (``Capabilities.file_limit`` > 0)."""

    async def send_file(self, file: OutboundFile) -> SendResult:
        """Send one file, as a picture when ``file.kind`` is "image", else a document;
        within the limits the capabilities declare (the messenger checked them)."""
