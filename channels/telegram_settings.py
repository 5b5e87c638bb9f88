"""The Telegram channel's settings section (``telegram:``): beside the package, so reading
the config does not import the Bot API client."""

from __future__ import annotations

from typing import Literal

from core.settings import StrictSettings


class TelegramSettings(StrictSettings):
    enabled: bool = False
    token: str | None = None
    owner_id: str | None = None  # numeric Telegram user id of the owner
    mode: Literal["polling", "webhook"] = "polling"
    webhook_secret: str | None = None  # X-Telegram-Bot-Api-Secret-Token
    webhook_url: str | None = None  # public https URL your proxy maps to /telegram/webhook
    api_base: str = "https://api.telegram.org"


__all__ = ["TelegramSettings"]
