"""``GET /healthz`` on the real listener: 200 while serving, 503 otherwise, no secret."""

from __future__ import annotations

import aiohttp

from channels.http import HttpServer
from channels.http.health import add_health
from channels.http_settings import HttpSettings


async def test_health_follows_serving_and_needs_no_secret() -> None:
    serving = False
    http = HttpServer(HttpSettings(host="127.0.0.1", port=0))
    add_health(http, lambda: serving)
    async with http, aiohttp.ClientSession() as client:
        async with client.get(f"{http.url}/healthz") as resp:
            assert resp.status == 503 and await resp.json() == {"ok": False}
        serving = True
        async with client.get(f"{http.url}/healthz") as resp:
            assert resp.status == 200 and await resp.json() == {"ok": True}
            assert resp.headers["Cache-Control"] == "no-store"
        async with client.post(f"{http.url}/healthz") as resp:
            assert resp.status == 405
