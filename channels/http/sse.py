"""The start of a Server-Sent Events response, one way for every page that streams (the
web chat's events, the dashboard's live pages)."""

from __future__ import annotations

from contextlib import suppress

from aiohttp import web

HEADERS = {
    "Content-Type": "text/event-stream",
    "Cache-Control": "no-store",
    "X-Accel-Buffering": "no",  # a reverse proxy must not hold events back
}


async def open_stream(request: web.Request, retry_ms: int = 2000) -> web.StreamResponse:
    """A prepared event stream, with the browser's reconnect delay said first."""
    response = web.StreamResponse(headers=HEADERS)
    await response.prepare(request)
    with suppress(ConnectionResetError):  # gone already: the caller's stream ends at once
        await response.write(f"retry: {retry_ms}\n\n".encode())
    return response


__all__ = ["open_stream"]
