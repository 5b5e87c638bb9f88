"""Live pages: a task's or a chat's page follows what happens over Server-Sent Events,
the way the web chat streams its replies (``channels/web/channel.py``).

The stream carries no data, only "this page changed": a fingerprint of what the page
shows (the task's row, its approval and commit, its model calls, the journal's size,
whether its run is paused) is read every ``POLL_SECONDS``; when it differs, an event
``change`` goes out and ``dash.js`` fetches the page again and swaps its live part in.
So the page a browser builds from an event is exactly the server-rendered one (escaped
by the same templates), and a page without script still works by reloading.

Streams are bounded (``MAX_STREAMS``: one more is a 503, which EventSource retries),
send a comment every ``HEARTBEAT_SECONDS`` (a proxy must not close an idle one), and all
end when the listener stops.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from contextlib import suppress
from typing import Any

from aiohttp import web

from channels.http.sse import open_stream

log = logging.getLogger(__name__)

POLL_SECONDS = 0.5
HEARTBEAT_SECONDS = 15.0
MAX_STREAMS = 32
Fingerprint = Callable[[], Awaitable[Any]]


class LiveStreams:
    def __init__(
        self,
        poll: float = POLL_SECONDS,
        heartbeat: float = HEARTBEAT_SECONDS,
        limit: int = MAX_STREAMS,
    ) -> None:
        self._poll, self._heartbeat, self._limit = poll, heartbeat, limit
        self._streams: set[asyncio.Task[Any]] = set()
        self._closing = False
        self._wake = asyncio.Event()

    @property
    def open(self) -> int:
        return len(self._streams)

    async def close(self) -> None:
        """Every open stream returns now (the listener is going away)."""
        self._closing = True
        self._wake.set()
        streams = list(self._streams)
        if streams:
            await asyncio.wait(streams, timeout=2.0)

    async def serve(self, request: web.Request, fingerprint: Fingerprint) -> web.StreamResponse:
        if self._closing or len(self._streams) >= self._limit:
            return web.Response(
                status=503, text="too many live pages open", headers={"Retry-After": "5"}
            )
        response = await open_stream(request)
        task = asyncio.current_task()
        if task is not None:
            self._streams.add(task)
        try:
            await self._follow(request, response, fingerprint)
        except ConnectionResetError:
            return response  # the page went away
        finally:
            if task is not None:
                self._streams.discard(task)
        with suppress(ConnectionResetError):
            await response.write_eof()
        return response

    async def _follow(
        self, request: web.Request, response: web.StreamResponse, fingerprint: Fingerprint
    ) -> None:
        last = await self._read(fingerprint)
        quiet = 0.0
        while not self._closing:
            with suppress(TimeoutError):
                async with asyncio.timeout(self._poll):
                    await self._wake.wait()
            transport = request.transport
            if self._closing or transport is None or transport.is_closing():
                return  # stopping, or the page went away: its slot is free at once
            now = await self._read(fingerprint)
            if now != last:
                last, quiet = now, 0.0
                await response.write(b"event: change\ndata: {}\n\n")
                continue
            quiet += self._poll
            if quiet >= self._heartbeat:
                quiet = 0.0
                await response.write(b": ping\n\n")

    @staticmethod
    async def _read(fingerprint: Fingerprint) -> Any:
        try:
            return await fingerprint()
        except Exception as err:  # a damaged store: the page says so when it reloads
            log.warning("dashboard: a live page's state could not be read: %s", err)
            return ("unreadable", str(err))


__all__ = ["HEARTBEAT_SECONDS", "MAX_STREAMS", "POLL_SECONDS", "LiveStreams"]
