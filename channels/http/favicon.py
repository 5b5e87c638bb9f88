"""``GET /favicon.ico``: browsers ask for it on every page; without it each page load
logs a 404 in the console. A small SVG Fetch serves itself (no data in it, no login)."""

from __future__ import annotations

from aiohttp import web

from channels.http.server import HttpServer

PATH = "/favicon.ico"
ICON = (
    b'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32">'
    b'<rect width="32" height="32" rx="7" fill="#0b57d0"/>'
    b'<path d="M10 8h13v4h-8.5v4H21v4h-6.5v6H10z" fill="#fff"/></svg>'
)


def add_favicon(http: HttpServer) -> None:
    async def favicon(_request: web.Request) -> web.Response:
        return web.Response(
            body=ICON,
            content_type="image/svg+xml",
            headers={"Cache-Control": "max-age=86400", "X-Content-Type-Options": "nosniff"},
        )

    http.add_route("GET", PATH, favicon)
