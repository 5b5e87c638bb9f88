"""The HTTP listener's settings section (``http:``): beside the package, so reading the
config does not import aiohttp's server."""

from __future__ import annotations

from pydantic import Field

from core.settings import StrictSettings


class HttpSettings(StrictSettings):
    """The one HTTP listener (webhooks, dashboard). Loopback unless said otherwise."""

    host: str = "127.0.0.1"
    port: int = Field(8787, ge=0, le=65535)


__all__ = ["HttpSettings"]
