"""The live pages' streams on a real aiohttp listener on 127.0.0.1: a change of the
fingerprint is one ``change`` event, nothing is said while nothing changes (but
heartbeats), the number open is bounded (503 past it), a page that goes away frees its
slot at once, and closing ends every stream."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass

import aiohttp
import pytest
from aiohttp import web

from orchestrator.dashboard.live import LiveStreams


@dataclass
class Served:
    live: LiveStreams
    url: str
    state: list[int]


@pytest.fixture
async def served() -> AsyncIterator[Served]:
    live = LiveStreams(poll=0.05, heartbeat=0.3, limit=2)
    state = [0]

    async def fingerprint() -> int:
        return state[0]

    async def handler(request: web.Request) -> web.StreamResponse:
        return await live.serve(request, fingerprint)

    app = web.Application()
    app.router.add_get("/live", handler)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    try:
        yield Served(live, f"http://127.0.0.1:{port}/live", state)
    finally:
        await live.close()
        await runner.cleanup()


async def _lines(response: aiohttp.ClientResponse, seconds: float) -> list[str]:
    got: list[str] = []
    try:
        async with asyncio.timeout(seconds):
            while line := await response.content.readline():
                if line.strip():
                    got.append(line.decode().strip())
    except TimeoutError:
        pass
    return got


async def until(check: object, timeout: float = 5) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not check():  # type: ignore[operator]
        assert asyncio.get_running_loop().time() < deadline, "condition never held"
        await asyncio.sleep(0.02)


async def test_changes_heartbeats_bounds_and_the_end(served: Served) -> None:
    async with aiohttp.ClientSession() as client:
        first = await client.get(served.url)
        assert first.status == 200 and first.headers["Content-Type"] == "text/event-stream"
        quiet = await _lines(first, 0.5)
        assert quiet[0] == "retry: 2000" and set(quiet[1:]) <= {": ping"}, quiet
        assert ": ping" in quiet  # a heartbeat while nothing changes
        served.state[0] = 1
        said = await _lines(first, 0.3)
        assert [line for line in said if line.startswith("event:")] == ["event: change"]
        # From here no heartbeat comes soon: a freed slot is the departure seen, not a
        # failed write.
        served.live._heartbeat = 60.0
        second = await client.get(served.url)
        assert second.status == 200
        third = await client.get(served.url)  # over the bound: refused, retried later
        assert third.status == 503 and third.headers["Retry-After"] == "5"
        third.release()
        second.close()  # the page went away: its slot is free without waiting
        await until(lambda: served.live.open == 1, 2)
        fourth = await client.get(served.url)
        assert fourth.status == 200
        await served.live.close()  # the listener stops: every stream ends
        assert await first.content.read() is not None
        await until(lambda: served.live.open == 0)
        after = await client.get(served.url)
        assert after.status == 503
        for response in (first, fourth, after):
            response.release()
