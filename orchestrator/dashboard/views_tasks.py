"""Tasks: the list (searchable by prompt or repo, filterable by status, paged) and one
task: prompt, harness, status, its diff (the commit it became, or the change waiting for
approval), the test results, the harness's events and the model calls it paid for."""

from __future__ import annotations

import asyncio
import logging

from aiohttp import web

from core.errors import FetchError
from orchestrator.dashboard.context import Dash, int_arg, text_arg
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
    return dash.page(
        request,
        "dash/task.html",
        title=f"Task {item.id}",
        task=item,
        commit=commit,
        approval=approval,
        patch=patch,
        cut=cut,
        source=source,
        calls=calls,
        sums=sums,
        mcp_calls=mcp_calls,
        events=events,
        events_cut=events_cut,
    )


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
