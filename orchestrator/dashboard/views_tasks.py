"""Tasks: the list (searchable by prompt or repo, filterable by status, paged) and one
task: prompt, harness, status, its progress, its diff (the commit it became, or the
change waiting for approval), the test results, the harness's events and the model calls
it paid for. The page follows the task live (``live.py``) and can stop, pause and resume
it and answer its diff (``actions.py``)."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

from aiohttp import web

from core.errors import FetchError
from orchestrator.dashboard.actions import controls_of
from orchestrator.dashboard.context import Dash, int_arg, text_arg
from orchestrator.dashboard.diffhtml import split_files
from orchestrator.dashboard.queries import PAGE, TaskItem
from orchestrator.dashboard.timeline import Entry, read_tail, session_key, task_events
from orchestrator.mcphost.record import calls_of
from orchestrator.workspace import Workspace

log = logging.getLogger(__name__)
DIFF_CAP = 512 * 1024  # a page shows this much of a diff; the rest is said to be cut
STATUSES = (
    "running",
    "proposed",
    "committed",
    "rejected",
    "expired",
    "failed",
    "stopped",
    "empty",
    "interrupted",
)


async def tasks(dash: Dash, request: web.Request) -> web.Response:
    query = text_arg(request, "q")
    status = text_arg(request, "status")
    status = status if status in STATUSES else ""
    offset = int_arg(request, "offset")
    page = await dash.queries.tasks(query, status, offset)
    return dash.page(
        request,
        "dash/tasks.html",
        title="Tasks",
        q=query,
        status=status,
        statuses=STATUSES,
        page=page,
        offset=offset,
        size=PAGE,
    )


def _diff(
    workspace: Workspace, repo: str, sha: str | None, trees: tuple[str, str] = ("", "")
) -> tuple[str, bool, str]:
    """(patch, cut, where it came from); ('', False, why) when there is none to show."""
    try:
        git = workspace.repo(repo)
        if sha is not None:
            patch, cut = git.read_capped(
                "show",
                "--no-color",
                "--no-ext-diff",
                "--no-textconv",
                "--format=%H%n%n%B",
                sha,
                limit=DIFF_CAP,
            )
            return patch, cut, f"commit {sha[:12]}"
        base, tree = trees
        change = git.change_between(base, tree) if tree else git.change()
    except (FetchError, OSError) as err:
        return "", False, f"the diff cannot be read: {err}"
    if change.empty:
        return "", False, "the change is empty"
    return (
        change.patch[:DIFF_CAP],
        change.truncated or len(change.patch) > DIFF_CAP,
        "waiting for approval",
    )


async def task(dash: Dash, request: web.Request) -> web.Response:
    try:
        task_id = int(request.match_info["id"])
    except ValueError:
        task_id = -1
    item = await dash.queries.task(task_id)
    if item is None:
        return dash.page(
            request, "dash/missing.html", 404, title="No such task", what=request.match_info["id"]
        )
    commit = await dash.queries.task_commit(item.id)
    approval = await dash.queries.task_approval(item.id)
    patch, cut, source = await _task_diff(dash, item, commit, approval)
    before = int_arg(request, "before") or None
    calls = await dash.queries.task_calls(item.id, before)
    sums = await dash.queries.task_call_sums(item.id)
    # The owner's MCP servers' calls of this task (orchestrator/mcphost/record.py).
    mcp_calls = await asyncio.to_thread(
        calls_of, dash.services.settings.home_dir / "mcp.jsonl", item.id
    )
    key = session_key(item.session)
    events: list[Entry] = []
    events_cut = False
    if key is not None:
        entries, older = await asyncio.to_thread(read_tail, dash.services.journal.path(key))
        events, events_cut = task_events(entries, item.id)
        events_cut = events_cut or older
    preamble, files = split_files(patch)
    return dash.page(
        request,
        "dash/task.html",
        title=f"Task {item.id}",
        task=item,
        commit=commit,
        approval=approval,
        patch=patch,
        preamble=preamble,
        files=files,
        cut=cut,
        source=source,
        calls=calls,
        sums=sums,
        mcp_calls=mcp_calls,
        events=events,
        events_cut=events_cut,
        progress=progress_of(events),
        controls=await controls_of(dash, item),
        note=text_arg(request, "note"),
        live=f"/live/tasks/{item.id}",
    )


def progress_of(events: list[Entry]) -> tuple[int, list[str], str]:
    """(the CLI's steps, the files it changed, newest first, its last step) from the
    task's events: what the phone's checklist says, as the page shows it."""
    steps = sum(e.kind == "tool_use" for e in events)
    files: list[str] = []
    for e in reversed(events):
        if e.kind == "file_change" and e.text and e.text not in files:
            files.append(e.text)
    last = next((e.text for e in reversed(events) if e.kind == "tool_use"), "")
    return steps, files[:5], last


async def task_live(dash: Dash, request: web.Request) -> web.StreamResponse:
    """The task page's live stream: one ``change`` event per change of what it shows."""
    try:
        task_id = int(request.match_info["id"])
    except ValueError:
        raise web.HTTPNotFound() from None
    item = await dash.queries.task(task_id)
    if item is None:
        raise web.HTTPNotFound()
    key = session_key(item.session)
    journal = dash.services.journal.path(key) if key is not None else None

    async def fingerprint() -> tuple[object, ...]:
        handle = dash.services.runner.running(key) if key is not None else None
        paused = handle.paused if handle is not None and handle.task_id == task_id else None
        return (
            await dash.queries.task_fingerprint(task_id),
            paused,
            await asyncio.to_thread(_size, journal),
        )

    return await dash.live.serve(request, fingerprint)


def _size(path: Path | None) -> int:
    try:
        return path.stat().st_size if path is not None else -1
    except OSError:
        return -1


async def _task_diff(
    dash: Dash,
    item: TaskItem,
    commit: tuple[str, str] | None,
    approval: tuple[str, float, str, str] | None,
) -> tuple[str, bool, str]:
    if commit is not None:
        return await asyncio.to_thread(_diff, dash.services.workspace, commit[0], commit[1])
    if item.status == "proposed" and approval is not None and approval[0] == "pending":
        return await asyncio.to_thread(
            _diff, dash.services.workspace, item.repo, None, (approval[2], approval[3])
        )
    return "", False, f"no diff kept for a task that is {item.status}"
