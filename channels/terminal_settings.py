"""The terminal channel's settings section (``terminal:``)."""

from __future__ import annotations

from core.settings import StrictSettings


class TerminalSettings(StrictSettings):
    enabled: bool = True
    chat: str = "owner"


__all__ = ["TerminalSettings"]
