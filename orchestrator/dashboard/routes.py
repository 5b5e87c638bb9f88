"""Every dashboard route in one place. ``PAGES`` lists the pages a browser opens (the
browser tests walk it); ``ACTIONS`` the POSTs that change something; ``mount`` puts
them all on the HTTP server behind the web token (``channels/http/auth.py``)."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from functools import partial

from aiohttp import web

from channels.base import Channel, InboundSink
from channels.http import HttpServer
from channels.http.auth import WebAuth
from orchestrator.dashboard import views_costs, views_ops, views_sessions, views_tasks
from orchestrator.dashboard.actions import task_action
from orchestrator.dashboard.assets import STATIC_PREFIX, static_files, static_handler
from orchestrator.dashboard.context import Dash
from orchestrator.dashboard.costcache import CostSums
from orchestrator.dashboard.live import LiveStreams
from orchestrator.dashboard.queries import DashboardQueries
from orchestrator.dashboard.render import Renderer
from orchestrator.services import Services

log = logging.getLogger(__name__)
View = Callable[[Dash, web.Request], Awaitable[web.StreamResponse]]

# (path a browser can open as is, title) — the pages with no parameter to fill in.
PAGES: tuple[tuple[str, str], ...] = (
    ("/", "Sessions"),
    ("/sessions", "Sessions"),
    ("/tasks", "Tasks"),
    ("/costs", "Costs"),
    ("/errors", "Errors"),
    ("/memory", "Memory"),
    ("/jobs", "Jobs"),
    ("/health", "Health"),
)
# (method, route, view): the pages above, the ones that take a parameter, and actions.
ROUTES: tuple[tuple[str, str, View], ...] = (
    ("GET", "/", views_sessions.sessions),
    ("GET", "/sessions", views_sessions.sessions),
    ("GET", "/sessions/{key:.+}", views_sessions.session),
    ("GET", "/tasks", views_tasks.tasks),
    ("GET", "/tasks/{id}", views_tasks.task),
    ("POST", "/tasks/{id}/{verb}", task_action),
    ("GET", "/live/tasks/{id}", views_tasks.task_live),
    ("GET", "/live/sessions/{key:.+}", views_sessions.session_live),
    ("GET", "/costs", views_costs.costs),
    ("GET", "/errors", views_ops.errors),
    ("GET", "/memory", views_ops.memory),
    ("POST", "/memory/{id}/forget", views_ops.forget),
    ("GET", "/jobs", views_ops.jobs),
    ("POST", "/jobs/{id}/{verb}", views_ops.job_action),
    ("GET", "/health", views_ops.health),
    ("GET", "/health/whatsapp-qr.svg", views_ops.whatsapp_qr),
    ("POST", "/health/whatsapp/link", views_ops.whatsapp_link),
)
ACTIONS = tuple((m, p) for m, p, _v in ROUTES if m == "POST")


def _answered(
    view: Callable[[web.Request], Awaitable[web.StreamResponse]], dash: Dash
) -> Callable[[web.Request], Awaitable[web.StreamResponse]]:
    """A page that fails (a damaged database, a full disk) says so in a page of its
    own and in the log; it never takes the listener or Fetch with it."""

    async def page(request: web.Request) -> web.StreamResponse:
        try:
            return await view(request)
        except web.HTTPException:
            raise
        except Exception as err:
            log.exception("dashboard: %s %s failed", request.method, request.path)
            return dash.page(
                request,
                "dash/failed.html",
                500,
                title="This page failed",
                why=f"{type(err).__name__}: {err}"[:500],
            )

    return page


def mount(
    http: HttpServer,
    auth: WebAuth,
    services: Services,
    channels: Sequence[Channel],
    sink: InboundSink | None = None,
) -> Dash:
    """Add every dashboard route to ``http`` (before it starts). ``sink`` is the
    gateway: a task page's buttons are said through it, as from the phone."""
    render = Renderer(services.settings.timezone)
    dash = Dash(
        services=services,
        channels=channels,
        auth=auth,
        render=render,
        queries=DashboardQueries(services.store.db),
        costs=CostSums(services.store.db, render.tz),
        live=LiveStreams(),
        sink=sink,
    )
    http.on_shutdown(dash.live.close)  # open live pages end with the listener
    for method, path, view in ROUTES:
        http.add_route(method, path, auth.require_auth(_answered(partial(view, dash), dash)))
    # The CSS and the script are not secret (no data in them): a login page may use them.
    http.add_route("GET", STATIC_PREFIX + "/{name}", static_handler(static_files()))
    return dash


__all__ = ["ACTIONS", "PAGES", "ROUTES", "mount"]
