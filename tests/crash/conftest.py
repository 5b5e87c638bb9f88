"""The fake Bot API fixture, shared with the Telegram channel tests."""

from tests.channels.telegram.conftest import tg

__all__ = ["tg"]
