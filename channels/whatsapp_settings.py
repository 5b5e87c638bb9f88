"""The WhatsApp channel's settings section (``whatsapp:``): beside the package, because
importing ``channels.whatsapp`` loads neonize's Go library and reading the config must not."""

from __future__ import annotations

from pydantic import Field

from core.settings import StrictSettings


class WhatsAppSettings(StrictSettings):
    """WhatsApp through neonize. ``owner`` is the owner's number (digits, country code)."""

    enabled: bool = False
    owner: str | None = None
    # Groups need the @fetch trigger; the owner's own chats can be configured either way.
    trigger_in_self_chat: bool = False
    trigger_in_direct_chat: bool = False
    min_send_interval_seconds: float = Field(3.0, ge=0)
    sends_per_minute: int = Field(12, ge=1)
    max_media_bytes: int = Field(16 * 1024 * 1024, ge=1024)


__all__ = ["WhatsAppSettings"]
