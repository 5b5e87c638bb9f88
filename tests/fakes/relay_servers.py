"""Real HTTP servers on 127.0.0.1 for the model relay's tests, and a raw client for the unix
socket (an HTTP library would tidy up the very requests a hostile CLI sends).

``Upstream`` is the configured vendor; at ``/v1/messages`` (the one path the relay lets
through for Anthropic) it answers normally (SSE with usage), or, as ``?fake=`` says,
redirects to ``Thief`` (``redirect-307``), streams then drops the connection (``drop``),
or answers slowly (``slow``). ``Thief`` is any other host: it records every request, and a
request carrying the key is the failure these tests exist to catch. Requests carry the
relay's ``SECRET``, as the CLI of a run does."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Self

from aiohttp import web

from kennel.relay import ModelRelay, RelayLimits

KEY = "sk-ant-real-relay-key-7f3c1e9a"
SECRET = "run-secret-for-relay-tests-5d1b"  # what RelaySpec.secret is for a real run
SSE = (
    'event: message_start\ndata: {"type":"message_start","message":{"usage":'
    '{"input_tokens":120,"output_tokens":1}}}\n\n'
    'event: message_delta\ndata: {"type":"message_delta","usage":{"output_tokens":30}}\n\n'
)


class _Server:
    def __init__(self) -> None:
        self.url = ""
        self.seen: list[tuple[str, str, dict[str, str]]] = []  # method, raw path, headers
        self._runner: web.AppRunner | None = None

    async def handle(self, request: web.Request) -> web.StreamResponse:
        raise NotImplementedError

    async def _record(self, request: web.Request) -> web.StreamResponse:
        self.seen.append(
            (request.method, request.raw_path, {k.lower(): v for k, v in request.headers.items()})
        )
        return await self.handle(request)

    async def __aenter__(self) -> Self:
        app = web.Application(client_max_size=1024**3)
        app.router.add_route("*", "/{tail:.*}", self._record)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self.url = f"http://127.0.0.1:{port}"
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._runner is not None
        await self._runner.cleanup()

    def keys_seen(self) -> list[str]:
        return [p for _m, p, h in self.seen if any(KEY in v for v in h.values())]


class Thief(_Server):
    async def handle(self, request: web.Request) -> web.StreamResponse:
        return web.Response(text="stolen")


class Upstream(_Server):
    def __init__(self, thief: Thief) -> None:
        super().__init__()
        self.thief = thief
        self.active = 0
        self.peak = 0  # most requests in flight at once

    async def handle(self, request: web.Request) -> web.StreamResponse:
        self.active += 1
        self.peak = max(self.peak, self.active)
        try:
            return await self._answer(request)
        finally:
            self.active -= 1

    async def _answer(self, request: web.Request) -> web.StreamResponse:
        await request.read()
        mode = request.query.get("fake", "")
        if mode.startswith("redirect-"):
            code = int(mode.removeprefix("redirect-"))
            return web.Response(status=code, headers={"Location": self.thief.url + "/steal"})
        response = web.StreamResponse(headers={"content-type": "text/event-stream"})
        await response.prepare(request)
        if mode == "drop":
            await response.write(SSE.split("\n\n")[0].encode() + b"\n\n")
            await asyncio.sleep(0.05)
            assert request.transport is not None
            request.transport.abort()  # the vendor goes away mid-stream
            return response
        if mode == "slow":  # 1 s, or until the relay hangs up (then it is not in flight)
            for _ in range(20):
                await asyncio.sleep(0.05)
                if request.transport is None or request.transport.is_closing():
                    return response
        with contextlib.suppress(ConnectionError):
            for part in SSE.split("\n\n"):
                await response.write((part + "\n\n").encode())
        return response


@asynccontextmanager
async def servers() -> AsyncIterator[tuple[Upstream, Thief]]:
    async with Thief() as thief, Upstream(thief) as upstream:
        yield upstream, thief


@asynccontextmanager
async def relay_on(
    upstream: Upstream, sock: Path, limits: RelayLimits | None = None
) -> AsyncIterator[ModelRelay]:
    relay = ModelRelay(
        socket_path=sock,
        upstream=upstream.url,
        provider="anthropic",
        api_key=KEY,
        secret=SECRET,
        harness="claude-code",
        task_id=1,
        log_path=sock.parent / "relay.jsonl",
        limits=limits,
    )
    async with relay:
        yield relay


async def raw(sock: Path, data: bytes, timeout: float = 10.0) -> bytes:
    """Send ``data`` as is, read until the relay closes (or ``timeout``)."""
    reader, writer = await asyncio.open_unix_connection(str(sock))

    async def send() -> None:
        with contextlib.suppress(ConnectionError):  # the relay may stop reading early
            writer.write(data)
            await writer.drain()

    sending = asyncio.create_task(send())
    out = b""
    try:
        async with asyncio.timeout(timeout):
            while chunk := await reader.read(65536):
                out += chunk
    except ConnectionError:
        pass
    finally:
        sending.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await sending
        writer.close()
    return out


def request(
    method: str,
    target: str,
    body: bytes = b'{"model":"claude-x"}',
    headers: dict[str, str] | None = None,
) -> bytes:
    head = [
        f"{method} {target} HTTP/1.1",
        "Host: relay",
        "Connection: close",
        "Content-Type: application/json",
        f"Content-Length: {len(body)}",
        f"x-api-key: {SECRET}",
    ]
    head += [f"{k}: {v}" for k, v in (headers or {}).items()]
    return ("\r\n".join(head) + "\r\n\r\n").encode() + body


def status_of(response: bytes) -> int:
    return int(response.split(b" ", 2)[1]) if response.startswith(b"HTTP/") else 0


__all__ = [
    "KEY",
    "SECRET",
    "Thief",
    "Upstream",
    "raw",
    "relay_on",
    "request",
    "servers",
    "status_of",
]
