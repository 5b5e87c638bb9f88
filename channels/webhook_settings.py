"""The webhook channel's settings section (``webhook:``)."""

from __future__ import annotations

from pydantic import Field

from core.settings import StrictSettings


class WebhookSettings(StrictSettings):
    """Generic HMAC-signed JSON channel (Shortcuts, scripts, home automation)."""

    enabled: bool = False
    secret: str | None = None
    max_body_bytes: int = Field(64 * 1024, ge=1024)


__all__ = ["WebhookSettings"]
