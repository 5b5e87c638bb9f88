"""Telegram: the channel (``channel``), its Bot API client (``api``), update mapping
(``updates``) and HTML formatting (``format``)."""

from channels.telegram.api import BotApi, TelegramApiError
from channels.telegram.channel import TelegramChannel

__all__ = ["BotApi", "TelegramApiError", "TelegramChannel"]
