"""The web chat channel (``/chat`` on the one HTTP listener, behind the web token)."""

from channels.web.channel import WebChatChannel

__all__ = ["WebChatChannel"]
