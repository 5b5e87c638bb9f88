"""The dashboard's own files: templates and the static CSS/JS, shipped in the top-level
``data/web/`` (the package ``fetch_data``: ``orchestrator/shipped.py``). Nothing is loaded
from anywhere else (no CDN, no web fonts): the pages work offline and the CSP can say
``'self'`` only.

``GET /static/dash/{name}`` serves exactly the files found in the folder when Fetch
starts, by name (no paths, no dot files), with a content type from a fixed table.
"""

from __future__ import annotations

from pathlib import Path

from aiohttp import web

from channels.http.server import Handler
from orchestrator.shipped import WEB_DATA

STATIC = WEB_DATA / "static" / "dash"
STATIC_PREFIX = "/static/dash"
_TYPES = {".css": "text/css", ".js": "text/javascript", ".svg": "image/svg+xml"}


def static_files(folder: Path = STATIC) -> dict[str, tuple[bytes, str]]:
    """Name -> (bytes, content type), read once: a handful of small files."""
    found: dict[str, tuple[bytes, str]] = {}
    for path in sorted(folder.iterdir()):
        kind = _TYPES.get(path.suffix)
        if kind is not None and path.is_file() and not path.name.startswith("."):
            found[path.name] = (path.read_bytes(), kind)
    return found


def static_handler(files: dict[str, tuple[bytes, str]]) -> Handler:
    async def serve(request: web.Request) -> web.Response:
        hit = files.get(request.match_info.get("name", ""))
        if hit is None:
            raise web.HTTPNotFound()
        body, kind = hit
        return web.Response(
            body=body,
            content_type=kind,
            charset="utf-8",
            headers={"Cache-Control": "max-age=3600", "X-Content-Type-Options": "nosniff"},
        )

    return serve


__all__ = ["STATIC_PREFIX", "WEB_DATA", "static_files", "static_handler"]
