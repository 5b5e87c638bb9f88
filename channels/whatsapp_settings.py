"""The WhatsApp channel's settings section (``whatsapp:``): beside the package, because
importing ``channels.whatsapp`` loads neonize's Go library and reading the config must not."""

from __future__ import annotations

from pydantic import Field, field_validator

from channels.phone import normalise_number
from core.settings import StrictSettings


class WhatsAppSettings(StrictSettings):
    """WhatsApp through neonize. ``owner`` is the owner's number with its country code, in
    any usual spelling (``+49 170 1234567``, ``0049…``, ``49-170-…``); it is kept as digits
    (``491701234567``), and a number that cannot exist refuses the start."""

    enabled: bool = False
    owner: str | None = None
    # Groups need the @fetch trigger; the owner's own chats can be configured either way.
    trigger_in_self_chat: bool = False
    trigger_in_direct_chat: bool = False
    min_send_interval_seconds: float = Field(3.0, ge=0)
    sends_per_minute: int = Field(12, ge=1)
    max_media_bytes: int = Field(16 * 1024 * 1024, ge=1024)

    @field_validator("owner", mode="before")
    @classmethod
    def _owner_number(cls, value: object) -> str | None:
        if isinstance(value, int) and not isinstance(value, bool):
            value = str(value)  # YAML reads `owner: 4915112345678` as a number
        if not isinstance(value, str):
            return value  # type: ignore[return-value]  # pydantic says "a valid string"
        return normalise_number(value) if value.strip() else None


__all__ = ["WhatsAppSettings"]
