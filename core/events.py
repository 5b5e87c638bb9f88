"""Frozen, channel-neutral events: what adapters produce and what the core sends back."""

from __future__ import annotations

import time
from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class SessionKey:
    """One conversation: a chat on a channel. Stored as ``channel_chat``."""

    channel: str
    chat: str

    @property
    def slug(self) -> str:
        # Used as a folder name: keep it to characters no filesystem objects to.
        safe = "".join(c if c.isalnum() or c in "-_.@+" else "_" for c in self.chat)
        return f"{self.channel}_{safe}"


@dataclass(frozen=True, slots=True)
class Attachment:
    """A file a person sent, kept by the adapter (after the gate) at ``path``.

    ``refused`` says why it was not taken (too long, too big, a type Fetch does not read):
    then nothing was downloaded and ``path`` is empty."""

    kind: str  # "image" | "audio" | "document"
    path: str
    mime: str = ""
    name: str = ""  # the file name the sender gave (documents), else ""
    seconds: float = 0.0  # audio: its length as the channel declared it
    size: int = 0  # bytes
    refused: str = ""


@dataclass(frozen=True, slots=True)
class Inbound:
    """One message from a person, normalised at the adapter boundary."""

    channel: str
    chat: str
    sender: str
    message_id: str
    text: str
    timestamp: float = field(default_factory=time.time)
    is_group: bool = False
    from_owner: bool = False
    reply_to: str | None = None
    reaction: str | None = None  # set when the event is a reaction to ``reply_to``
    # Set by channels whose approval buttons carry the approval's nonce (Telegram).
    approval_nonce: str | None = None
    attachments: tuple[Attachment, ...] = ()
    # Set once by the gateway when the (cleaned) text is a command: the word as typed,
    # lower case (``/Jobs`` -> "jobs"), and everything after it. Nothing parses again.
    command: str | None = None
    args: str = ""

    @property
    def key(self) -> SessionKey:
        return SessionKey(self.channel, self.chat)


@dataclass(frozen=True, slots=True)
class Outbound:
    channel: str
    chat: str
    text: str
    reply_to: str | None = None
    edit_of: str | None = None  # message id to edit in place, where the channel can
    # Set on the diff message: channels with buttons bind them to this approval.
    approval_nonce: str | None = None

    @property
    def key(self) -> SessionKey:
        return SessionKey(self.channel, self.chat)


@dataclass(frozen=True, slots=True)
class OutboundFile:
    """A file Fetch sends (``/send``): its bytes, read safely by the caller; ``kind``
    "image" is shown as a picture where the channel can, anything else as a document."""

    channel: str
    chat: str
    name: str
    data: bytes = field(repr=False)
    mime: str = "application/octet-stream"
    kind: str = "document"  # image | document
    caption: str = ""


@dataclass(frozen=True, slots=True)
class SendResult:
    message_id: str
