"""``GET /healthz`` on the one HTTP listener, for Docker Compose and monitors.

No secret needed, so nothing in it: ``{"ok": true}`` while Fetch serves, 503 with
``{"ok": false}`` while it starts or stops. No version, no channel names, no counts.
"""

from __future__ import annotations

from collections.abc import Callable

from aiohttp import web

from channels.http.server import HttpServer

PATH = "/healthz"


def add_health(http: HttpServer, serving: Callable[[], bool]) -> None:
    async def health(_request: web.Request) -> web.Response:
        ok = serving()
        return web.json_response(
            {"ok": ok}, status=200 if ok else 503, headers={"Cache-Control": "no-store"}
        )

    http.add_route("GET", PATH, health)
