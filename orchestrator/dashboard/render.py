"""Server-rendered pages: one Jinja2 environment with autoescape always on, and the
response headers every page carries (a strict CSP: no inline script, no inline style,
nothing from anywhere but Fetch itself).

Everything a page shows may come from a user, a CLI, a model or a repository, so the
templates never mark text safe; the one exception is the QR code's SVG, which Fetch
itself draws from a pairing code (segno escapes nothing it is given: it writes only
path data).
"""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any
from zoneinfo import ZoneInfo

from aiohttp import web

from orchestrator.dashboard.assets import WEB_DATA

if TYPE_CHECKING:
    from jinja2 import Environment

TEMPLATES = WEB_DATA / "templates"
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:;"
    " connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
)
HEADERS = {
    "Content-Security-Policy": CSP,
    "Cache-Control": "no-store",
    "Referrer-Policy": "no-referrer",
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
}


def _when(ts: float | None, tz: ZoneInfo) -> str:
    if not ts:
        return "—"
    return datetime.fromtimestamp(ts, tz).strftime("%Y-%m-%d %H:%M:%S")


def _ago(ts: float | None) -> str:
    if not ts:
        return "never"
    delta = time.time() - ts
    if delta < 0:
        return "in " + _span(-delta)
    return _span(delta) + " ago"


def _span(seconds: float) -> str:
    if seconds < 90:
        return f"{int(seconds)}s"
    if seconds < 90 * 60:
        return f"{int(seconds // 60)}m"
    if seconds < 36 * 3600:
        return f"{int(seconds // 3600)}h"
    return f"{int(seconds // 86400)}d"


def _money(usd: float | None) -> str:
    value = usd or 0.0
    return f"${value:,.4f}" if 0 < value < 1 else f"${value:,.2f}"


def _tokens(count: int | float | None) -> str:
    """Token counts as people read them: 950, 12.3k, 4.1M."""
    n = float(count or 0)
    if n < 1000:
        return f"{n:.0f}"
    if n < 1_000_000:
        return f"{n / 1000:.1f}k".replace(".0k", "k")
    return f"{n / 1_000_000:.1f}M".replace(".0M", "M")


def _ms(value: float | None) -> str:
    if value is None:
        return "—"
    return f"{value:,.0f} ms" if value < 10_000 else f"{value / 1000:,.1f} s"


class Renderer:
    def __init__(self, timezone: str = "UTC", templates: Path = TEMPLATES) -> None:
        try:
            self.tz = ZoneInfo(timezone)
        except (KeyError, ValueError):
            self.tz = ZoneInfo("UTC")
        self._templates = templates
        self._env: Environment | None = None

    @property
    def env(self) -> Environment:
        """Built by ``prepare``'s thread once Fetch has started (jinja2 is ~25 ms that the
        start need not wait for), or here by a page that came first."""
        if self._env is None:
            self._env = self._build()
        return self._env

    def prepare(self) -> None:
        """Build the environment in a thread of its own, now: jinja2 is imported off the
        start-up path and never on the event loop by the first page."""
        threading.Thread(target=lambda: self.env, name="dashboard:jinja2", daemon=True).start()

    def _build(self) -> Environment:
        from jinja2 import Environment, FileSystemLoader, StrictUndefined, select_autoescape

        env = Environment(
            loader=FileSystemLoader(str(self._templates)),
            autoescape=select_autoescape(default=True, default_for_string=True),
            undefined=StrictUndefined,
            trim_blocks=True,
            lstrip_blocks=True,
        )
        env.filters["when"] = lambda ts: _when(ts, self.tz)
        env.filters["ago"] = _ago
        env.filters["money"] = _money
        env.filters["ms"] = _ms
        env.filters["span"] = _span
        env.filters["tok"] = _tokens
        # The time of day alone: a task's calls fit a phone's table (the page has dates).
        env.filters["clock"] = lambda ts: _when(ts, self.tz)[11:] if ts else "—"
        env.globals["utc"] = UTC
        return env

    def html(self, name: str, code: int = 200, **context: Any) -> web.Response:
        body = self.env.get_template(name).render(**context)
        return web.Response(status=code, text=body, content_type="text/html", headers=HEADERS)


__all__ = ["CSP", "HEADERS", "Renderer"]
