"""A scripted model vendor for the relay's tests: a real aiohttp server on 127.0.0.1 that
records every request exactly as it arrived (method, raw path, headers, body bytes) and
answers as the test scripts it; and the real relay in front of it, on a unix socket."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Self

import aiohttp
from aiohttp import web

from kennel.relay import ModelRelay

KEY = "sk-real-owner-key-0c6f2e9a41d7b358"  # the owner's key: must never reach the kennel
SECRET = "run-secret-Qx7pT2mZ"  # the run's secret: what the CLI holds


@dataclass(frozen=True)
class Seen:
    method: str
    raw_path: str  # with the query, as the relay sent it
    headers: dict[str, str]  # lower-case names
    body: bytes

    @property
    def json(self) -> Any:
        return json.loads(self.body)


Reply = Callable[[web.Request], Awaitable[web.StreamResponse]]


async def _ok(request: web.Request) -> web.StreamResponse:
    return web.json_response({"id": "msg_1", "usage": {"input_tokens": 3, "output_tokens": 2}})


class Vendor:
    def __init__(self) -> None:
        self.url = ""
        self.seen: list[Seen] = []
        self.reply: Reply = _ok
        self._runner: web.AppRunner | None = None

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        body = await request.read()
        headers = {k.lower(): v for k, v in request.headers.items()}
        self.seen.append(Seen(request.method, request.raw_path, headers, body))
        return await self.reply(request)

    async def __aenter__(self) -> Self:
        app = web.Application(client_max_size=1024**3)
        app.router.add_route("*", "/{tail:.*}", self._handle)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.url = f"http://127.0.0.1:{self._runner.addresses[0][1]}"
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._runner is not None
        await self._runner.cleanup()


@asynccontextmanager
async def relay_to(
    vendor: Vendor, sock: Path, provider: str = "anthropic", suffix: str = "", **kwargs: Any
) -> AsyncIterator[ModelRelay]:
    """The real relay on ``sock`` in front of ``vendor`` (+ ``suffix``, e.g. /v1)."""
    relay = ModelRelay(
        socket_path=sock,
        upstream=vendor.url + suffix,
        provider=provider,
        api_key=KEY,
        secret=kwargs.pop("secret", SECRET),
        harness="probe",
        task_id=1,
        log_path=sock.parent / "relay.jsonl",
        **kwargs,
    )
    async with relay:
        yield relay


@dataclass(frozen=True)
class Answer:
    status: int
    headers: dict[str, str]
    body: bytes

    @property
    def json(self) -> Any:
        return json.loads(self.body)


async def call(
    sock: Path,
    method: str,
    target: str,
    body: Any = None,
    headers: dict[str, str | None] | None = None,
) -> Answer:
    """One request to the relay as a CLI makes it; ``body``: bytes as is, else JSON. The
    run's secret goes as ``x-api-key`` unless ``headers`` say otherwise (None: not sent)."""
    data = body if isinstance(body, bytes) or body is None else json.dumps(body).encode()
    wanted = {"x-api-key": SECRET, "content-type": "application/json", **(headers or {})}
    sent = {k: v for k, v in wanted.items() if v is not None}
    async with (
        aiohttp.ClientSession(connector=aiohttp.UnixConnector(path=str(sock))) as client,
        client.request(method, f"http://relay{target}", data=data, headers=sent) as resp,
    ):
        raw = await resp.read()
        return Answer(resp.status, {k.lower(): v for k, v in resp.headers.items()}, raw)


def logged(sock: Path) -> list[dict[str, Any]]:
    """The relay's relay.jsonl entries."""
    path = sock.parent / "relay.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines()]


__all__ = ["KEY", "SECRET", "Answer", "Seen", "Vendor", "call", "logged", "relay_to"]
