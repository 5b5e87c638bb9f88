"""The web chat's settings section (``webchat:``): beside the package, so reading the
config imports no aiohttp."""

from __future__ import annotations

from pydantic import Field

from core.settings import StrictSettings


class WebChatSettings(StrictSettings):
    """The owner's chat page (``/chat``) on the one HTTP listener, behind the web token.
    On by default: the listener is loopback unless ``http.host`` says otherwise."""

    enabled: bool = True
    chat: str = Field("owner", pattern=r"^[A-Za-z0-9_.-]{1,64}$")
    # Replies kept per chat for a reconnecting page (SSE Last-Event-ID): the oldest go.
    outbox_size: int = Field(500, ge=10, le=100_000)
    # A comment line this often keeps proxies and the browser from closing a quiet stream.
    heartbeat_seconds: float = Field(15.0, gt=0, le=300)
    max_message_chars: int = Field(16_000, ge=100, le=1_000_000)


__all__ = ["WebChatSettings"]
