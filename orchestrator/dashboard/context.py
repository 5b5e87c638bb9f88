"""What every dashboard handler reads: the application's services, the channels, the
renderer and the queries, in one object the site builds once."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from aiohttp import web

from channels.base import Channel, InboundSink
from channels.http.auth import WebAuth
from orchestrator.dashboard.costcache import CostSums
from orchestrator.dashboard.live import LiveStreams
from orchestrator.dashboard.queries import DashboardQueries
from orchestrator.dashboard.render import Renderer
from orchestrator.services import Services


@runtime_checkable
class Pairable(Protocol):
    """A channel that can be linked from here (WhatsApp: it shows the QR payload)."""

    def pairing_code(self) -> str | None: ...

    async def link(self) -> bool:
        """Ask for codes now; False when already linked."""


@dataclass
class Dash:
    services: Services
    channels: Sequence[Channel]
    auth: WebAuth
    render: Renderer
    queries: DashboardQueries
    costs: CostSums
    live: LiveStreams  # the live pages' event streams
    sink: InboundSink | None = None  # the gateway: a task page's buttons speak through it

    def page(self, request: web.Request, name: str, code: int = 200, **ctx: Any) -> web.Response:
        return self.render.html(
            name,
            code,
            csrf=self.auth.csrf_token(request),
            path=request.path,
            chat=self.channel("web") is not None,  # the web chat's link in the menu
            **{"live": "", "note": "", **ctx},
        )

    def channel(self, name: str) -> Channel | None:
        return next((c for c in self.channels if c.name == name), None)


def int_arg(request: web.Request, name: str, default: int = 0, ceiling: int = 10**9) -> int:
    """A non-negative integer query argument; junk is the default, never an error page."""
    raw = request.query.get(name, "")
    try:
        value = int(raw)
    except ValueError:
        return default
    return min(max(value, 0), ceiling)


def text_arg(request: web.Request, name: str, limit: int = 200) -> str:
    return request.query.get(name, "").strip()[:limit]


__all__ = ["Dash", "Pairable", "int_arg", "text_arg"]
