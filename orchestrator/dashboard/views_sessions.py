"""Sessions: the list (searchable, paged; a search shows the matching words of each
chat) and one chat's replay: its messages in order with their times, and the
orchestrator's tool calls and the harnesses' events from the journal, merged by time.
A chat's page follows it live (``live.py``)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from urllib.parse import quote

from aiohttp import web

from orchestrator.dashboard.context import Dash, int_arg, text_arg
from orchestrator.dashboard.queries import PAGE
from orchestrator.dashboard.snippet import snippet
from orchestrator.dashboard.timeline import read_tail, session_key, tools_and_events


async def sessions(dash: Dash, request: web.Request) -> web.Response:
    query = text_arg(request, "q")
    offset = int_arg(request, "offset")
    page = await dash.queries.sessions(query, offset)
    found = await dash.queries.snippets([s.key for s in page.rows], query) if query else {}
    return dash.page(
        request,
        "dash/sessions.html",
        title="Sessions",
        q=query,
        page=page,
        offset=offset,
        size=PAGE,
        snippets={key: snippet(text, query) for key, text in found.items()},
    )


async def session(dash: Dash, request: web.Request) -> web.Response:
    raw = request.match_info["key"]
    key = session_key(raw)
    item = await dash.queries.session(raw)
    if key is None or item is None:
        return dash.page(request, "dash/missing.html", 404, title="No such session", what=raw)
    before = int_arg(request, "before") or None
    await dash.services.store.messages.flush()  # the log is written behind: the last replies
    messages = await dash.queries.messages(raw, before)
    path = dash.services.journal.path(key)
    entries, older = await asyncio.to_thread(read_tail, path)
    timeline = tools_and_events(entries)
    if messages.rows:  # only the span of messages shown
        first = messages.rows[0].ts if messages.more else 0.0
        timeline = [e for e in timeline if e.ts >= first]
    costs = {int(t.key): t for t in await dash.services.store.usage.by_message(raw, 200)}
    rows: list[tuple[float, str, object]] = [(m.ts, "message", m) for m in messages.rows]
    rows += [(e.ts, e.role, e) for e in timeline]
    rows.sort(key=lambda r: r[0])
    tasks = await dash.queries.session_tasks(raw)
    return dash.page(
        request,
        "dash/session.html",
        title=f"Session {raw}",
        item=item,
        rows=rows,
        more=messages.more,
        oldest=messages.rows[0].id if messages.rows else None,
        journal_cut=older,
        costs=costs,
        tasks=tasks,
        live="/live/sessions/" + quote(raw, safe="/:@"),
    )


async def session_live(dash: Dash, request: web.Request) -> web.StreamResponse:
    """The chat page's live stream: one ``change`` event per change of what it shows."""
    raw = request.match_info["key"]
    key = session_key(raw)
    if key is None or await dash.queries.session(raw) is None:
        raise web.HTTPNotFound()
    journal = dash.services.journal.path(key)

    async def fingerprint() -> tuple[object, ...]:
        return (
            await dash.queries.session_fingerprint(raw),
            await asyncio.to_thread(_size, journal),
        )

    return await dash.live.serve(request, fingerprint)


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return -1
