"""Errors, memory, jobs and health: what went wrong, what Fetch remembers (search and
forget), the scheduler's jobs (pause, resume, cancel) and whether each part is up.

Every change is a POST (the auth wrapper checks the CSRF token first) that redirects
back to its page with a note, so a reload never repeats it.
"""

from __future__ import annotations

import time
from urllib.parse import quote

from aiohttp import web

from core.errors import FetchError
from orchestrator.dashboard.context import Dash, Pairable, int_arg, text_arg
from orchestrator.dashboard.qr import qr_svg
from orchestrator.scheduler.cron import Cron
from orchestrator.scheduler.jobs import Job, Run
from orchestrator.scheduler.localtime import zone

DAY = 86400.0
JOB_STATUSES = ("active", "paused", "failed", "done", "cancelled")
NEXT_SLOTS = 3


def _back(path: str, note: str) -> web.Response:
    return web.Response(status=303, headers={"Location": f"{path}?note={quote(note)}"})


# -- errors ------------------------------------------------------------------------------
async def errors(dash: Dash, request: web.Request) -> web.Response:
    before = int_arg(request, "before") or None
    channels = [(c.name, c.health()) for c in dash.channels]
    return dash.page(
        request,
        "dash/errors.html",
        title="Errors",
        tasks=await dash.queries.failed_tasks(),
        calls=await dash.queries.failed_calls(before),
        runs=await dash.queries.failed_runs(),
        channels=[c for c in channels if "⚠" in c[1] or "error" in c[1].lower()],
        memory=dash.services.memory.status_line(),
    )


# -- memory ------------------------------------------------------------------------------
async def memory(dash: Dash, request: web.Request) -> web.Response:
    service = dash.services.memory
    query = text_arg(request, "q")
    note = text_arg(request, "note")
    if not service.enabled:
        return dash.page(
            request,
            "dash/memory.html",
            title="Memory",
            enabled=False,
            line=service.status_line(),
            q=query,
            hits=[],
            newest=[],
            counts={},
            note=note,
        )
    hits = await service.search(query, limit=30, min_score=0.0) if query else []
    counts, newest = await service.overview(newest=30)
    return dash.page(
        request,
        "dash/memory.html",
        title="Memory",
        enabled=True,
        line=service.status_line(),
        q=query,
        hits=hits,
        newest=newest,
        counts=counts,
        note=note,
    )


async def forget(dash: Dash, request: web.Request) -> web.Response:
    service = dash.services.memory
    try:
        item_id = int(request.match_info["id"])
    except ValueError:
        return _back("/memory", "no such memory")
    if not service.enabled:
        return _back("/memory", "memory is off")
    gone = await service.forget(item_id, subject="owner")  # the dashboard is the owner's
    return _back("/memory", f"forgot #{item_id}" if gone else f"no memory #{item_id}")


# -- jobs --------------------------------------------------------------------------------
def next_slots(job: Job, count: int = NEXT_SLOTS) -> list[float]:
    if job.status != "active" or job.next_at is None:
        return []
    slots = [job.next_at]
    if job.cron is not None:
        try:
            cron, tz = Cron(job.cron), zone(job.tz)
            while len(slots) < count:
                slots.append(cron.next_after(slots[-1], tz))
        except (FetchError, ValueError):
            pass
    return slots


async def jobs(dash: Dash, request: web.Request) -> web.Response:
    scheduler = dash.services.scheduler
    note = text_arg(request, "note")
    if scheduler is None:
        return dash.page(
            request, "dash/jobs.html", title="Jobs", enabled=False, rows=[], note=note, line=""
        )
    listing = await scheduler.jobs.listing(None, JOB_STATUSES)
    listing = sorted(listing, key=lambda j: (JOB_STATUSES.index(j.status), -j.id))[:200]
    rows: list[tuple[Job, list[Run], int, list[float]]] = []
    for job in listing:
        runs = await scheduler.jobs.runs(job.id, 10)
        rows.append((job, runs, sum(r.status == "missed" for r in runs), next_slots(job)))
    return dash.page(
        request,
        "dash/jobs.html",
        title="Jobs",
        enabled=True,
        rows=rows,
        note=note,
        line=scheduler.status_line(),
    )


async def job_action(dash: Dash, request: web.Request) -> web.Response:
    scheduler = dash.services.scheduler
    verb = request.match_info["verb"]
    try:
        job_id = int(request.match_info["id"])
    except ValueError:
        return _back("/jobs", "no such job")
    if scheduler is None:
        return _back("/jobs", "the scheduler is off")
    job = await scheduler.jobs.get(job_id)
    if job is None:
        return _back("/jobs", f"no job #{job_id}")
    try:
        if verb == "pause":
            ok = await scheduler.pause(job)
        elif verb == "resume":
            ok = await scheduler.resume(job) is not None
        elif verb == "cancel":
            ok = await scheduler.cancel(job)
        else:
            return _back("/jobs", f"unknown action {verb}")
    except FetchError as err:
        return _back("/jobs", f"#{job_id}: {err}")
    done = {"pause": "paused", "resume": "resumed", "cancel": "cancelled"}[verb]
    return _back("/jobs", f"#{job_id} {done}" if ok else f"#{job_id} is {job.status}: not {done}")


# -- health ------------------------------------------------------------------------------
async def health(dash: Dash, request: web.Request) -> web.Response:
    s = dash.services
    since = time.time() - DAY
    relay = await dash.queries.calls_since(since, "relay")
    model = await dash.queries.calls_since(since, "orchestrator")
    whatsapp = dash.channel("whatsapp")
    pairing = _pairing_code(dash) is not None
    line = whatsapp.health() if whatsapp is not None else None
    return dash.page(
        request,
        "dash/health.html",
        title="Health",
        channels=[(c.name, c.health()) for c in dash.channels],
        kennel=(s.kennel.name, s.kennel.isolation()),
        relay=relay,
        model=model,
        memory=s.memory.status_line(),
        scheduler=s.scheduler.status_line() if s.scheduler is not None else "scheduler: off",
        whatsapp=line,
        pairing=pairing,
        can_link=isinstance(whatsapp, Pairable)
        and not pairing
        and not (line or "").startswith("whatsapp: connected"),
        note=text_arg(request, "note"),
        up_since=s.started_at,
    )


async def whatsapp_link(dash: Dash, request: web.Request) -> web.Response:
    """Start linking WhatsApp from here: the page then shows the QR codes it sends."""
    channel = dash.channel("whatsapp")
    if not isinstance(channel, Pairable):
        return _back("/health", "WhatsApp is not configured")
    try:
        asked = await channel.link()
    except FetchError as err:
        return _back("/health", str(err))
    return _back("/health", "waiting for WhatsApp's code" if asked else "already linked")


def _pairing_code(dash: Dash) -> str | None:
    channel = dash.channel("whatsapp")
    return channel.pairing_code() if isinstance(channel, Pairable) else None


async def whatsapp_qr(dash: Dash, request: web.Request) -> web.Response:
    """The current pairing QR as SVG; 404 when there is none (paired, or not asked)."""
    code = _pairing_code(dash)
    if code is None:
        raise web.HTTPNotFound(text="no pairing code now")
    try:
        svg = qr_svg(code)
    except ValueError as err:
        raise web.HTTPNotFound(text=str(err)) from err
    return web.Response(
        body=svg,
        content_type="image/svg+xml",
        headers={"Cache-Control": "no-store", "Content-Security-Policy": "default-src 'none'"},
    )
