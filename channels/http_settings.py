"""The HTTP listener's settings section (``http:``): beside the package, so reading the
config does not import aiohttp's server."""

from __future__ import annotations

from urllib.parse import urlsplit

from pydantic import Field, field_validator

from core.settings import StrictSettings

_WILDCARDS = {"0.0.0.0", "::", ""}


class HttpSettings(StrictSettings):
    """The one HTTP listener (webhooks, dashboard). Loopback unless said otherwise."""

    host: str = "127.0.0.1"
    port: int = Field(8787, ge=0, le=65535)
    # Where a browser reaches the listener, when that is not host:port (a container's
    # published port, a reverse proxy): the login links Fetch prints start with it.
    public_url: str | None = None

    @field_validator("public_url")
    @classmethod
    def _an_http_address(cls, value: str | None) -> str | None:
        if value is None:
            return None
        parts = urlsplit(value)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError("an http(s) address such as http://127.0.0.1:8787")
        return value.rstrip("/")

    def link_base(self, bound_port: int | None = None) -> str:
        """The address login links start with: ``public_url``, else the listener's own
        (a wildcard host, which no browser can open, as 127.0.0.1)."""
        if self.public_url:
            return self.public_url
        host = "127.0.0.1" if self.host in _WILDCARDS else self.host
        shown = f"[{host}]" if ":" in host else host
        return f"http://{shown}:{self.port if bound_port is None else bound_port}"


__all__ = ["HttpSettings"]
