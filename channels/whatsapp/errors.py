"""WhatsApp's additions to the exception tree (see ``core/errors.py``).

ChannelError
├── RecipientNotAllowed   the chat never wrote to Fetch (reply-only rule)
└── SendFailed
    └── WhatsAppUnavailable  logged out, banned or session replaced: needs the owner
"""

from __future__ import annotations

from core.errors import ChannelError, SendFailed


class RecipientNotAllowed(ChannelError):
    def __init__(self, chat: str) -> None:
        self.chat = chat
        super().__init__(
            f"refused to message {chat}: it has never written to Fetch, and "
            "Fetch only answers chats that wrote first"
        )


class WhatsAppUnavailable(SendFailed):
    pass
