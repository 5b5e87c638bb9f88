"""One aiohttp request handed to an ASGI app (the ``mcp`` package's streamable-HTTP
apps), in this process and event loop: how the relay's socket serves MCP servers
(Fetch's memory, the owner's servers through gateway.py) without another listener."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from typing import Any

import aiohttp
from aiohttp import web

Asgi = Callable[
    [
        dict[str, Any],
        Callable[[], Awaitable[dict[str, Any]]],
        Callable[[dict[str, Any]], Awaitable[None]],
    ],
    Awaitable[None],
]


async def asgi_bridge(
    app: Asgi, request: web.Request, body: bytes, *, drop: tuple[str, ...] = ()
) -> web.StreamResponse:
    """Run ``app`` for ``request`` (whose ``body`` was read); headers named in ``drop``
    are not passed on (a caller header a CLI could forge)."""
    dropped = {d.lower() for d in drop}
    headers = [
        (k.lower().encode("latin-1"), v.encode("latin-1"))
        for k, v in request.headers.items()
        if k.lower() not in dropped
    ]
    scope: dict[str, Any] = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": request.method,
        "scheme": "http",
        "path": request.path,
        "raw_path": request.path.encode(),
        "query_string": request.query_string.encode(),
        "root_path": "",
        "headers": headers,
        "client": ("127.0.0.1", 0),
        "server": ("127.0.0.1", 0),
    }
    sent = False
    disconnected = asyncio.Event()

    async def receive() -> dict[str, Any]:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        # A GET opens a server-to-client stream that ends only when the client goes;
        # aiohttp does not tell a handler that, so watch the transport.
        while not disconnected.is_set():
            if request.transport is None or request.transport.is_closing():
                disconnected.set()
                break
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(disconnected.wait(), 0.5)
        return {"type": "http.disconnect"}

    response: web.StreamResponse | None = None

    async def send(message: dict[str, Any]) -> None:
        nonlocal response
        if message["type"] == "http.response.start":
            response = web.StreamResponse(status=int(message["status"]))
            for key, value in message.get("headers", []):
                name = key.decode("latin-1")
                if name.lower() not in {"content-length", "transfer-encoding"}:
                    response.headers.add(name, value.decode("latin-1"))
            await response.prepare(request)
        elif message["type"] == "http.response.body" and response is not None:
            if disconnected.is_set():
                return
            try:
                chunk = message.get("body", b"")
                if chunk:
                    await response.write(chunk)
                if not message.get("more_body", False):
                    await response.write_eof()
            except (ConnectionError, aiohttp.ClientConnectionResetError):
                disconnected.set()  # the CLI went away (it exits at the end of a task)

    try:
        await app(scope, receive, send)
    finally:
        disconnected.set()
    if response is None:
        return web.json_response({"error": "the MCP server gave no answer"}, status=500)
    return response


__all__ = ["asgi_bridge"]
