"""A logged-in web chat client over real HTTP: post like the page does, read the event
stream (Server-Sent Events) like the browser's EventSource."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import aiohttp

from channels.http.auth import CSRF_HEADER, WebAuth


@dataclass(frozen=True)
class Sse:
    id: int
    kind: str
    data: dict[str, Any]

    @property
    def text(self) -> str:
        return str(self.data.get("text", ""))


@dataclass
class Stream:
    response: aiohttp.ClientResponse
    comments: list[str] = field(default_factory=list)
    seen: list[Sse] = field(default_factory=list)

    async def next(self, timeout: float = 30) -> Sse | None:
        """The next event, or None when the server ended the stream."""
        fields: dict[str, str] = {}
        async with asyncio.timeout(timeout):
            while True:
                raw = await self.response.content.readline()
                if not raw:
                    return None
                line = raw.decode().rstrip("\n")
                if line.startswith(":"):
                    self.comments.append(line)
                    continue
                if line == "":
                    if "data" in fields:
                        event = Sse(
                            int(fields.get("id", "0")),
                            fields.get("event", "message"),
                            json.loads(fields["data"]),
                        )
                        self.seen.append(event)
                        return event
                    fields.clear()
                    continue
                name, _, value = line.partition(":")
                fields[name] = value.removeprefix(" ")

    async def until(self, check: Callable[[Sse], bool], timeout: float = 60) -> Sse:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            left = deadline - loop.time()
            event = await self.next(max(left, 0.01)) if left > 0 else None
            if event is None:
                texts = [e.text[:120] for e in self.seen]
                raise AssertionError(f"no matching event within {timeout}s; seen {texts!r}")
            if check(event):
                return event


class ChatClient:
    def __init__(self, base: str, auth: WebAuth) -> None:
        self.base = base
        self.auth = auth
        # unsafe=True: keep the cookie of 127.0.0.1 (an address, not a name) like a browser.
        self.session = aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True))

    async def login(self) -> None:
        async with self.session.get(self.auth.login_url(self.base), allow_redirects=False) as r:
            assert r.status == 303, await r.text()

    async def close(self) -> None:
        await self.session.close()

    async def send(self, text: str, **extra: Any) -> tuple[int, dict[str, Any]]:
        headers = {CSRF_HEADER: self.auth.csrf_token()}
        body = {"text": text, **extra}
        async with self.session.post(self.base + "/chat/send", json=body, headers=headers) as r:
            return r.status, await r.json()

    async def answer(self, diff: Sse, word: str, **override: str) -> tuple[int, dict[str, Any]]:
        """Press a diff's button: what the page's Approve/Reject sends."""
        fields = {"nonce": diff.data["nonce"], "reply_to": diff.data["message_id"], **override}
        return await self.send(word, **fields)

    @asynccontextmanager
    async def stream(
        self, *, after: int | None = None, last_event_id: int | None = None
    ) -> AsyncIterator[Stream]:
        url = self.base + "/chat/events" + (f"?after={after}" if after is not None else "")
        headers = {"Accept": "text/event-stream"}
        if last_event_id is not None:
            headers["Last-Event-ID"] = str(last_event_id)
        async with self.session.get(url, headers=headers) as response:
            assert response.status == 200, await response.text()
            assert response.headers["Content-Type"].startswith("text/event-stream")
            yield Stream(response)
