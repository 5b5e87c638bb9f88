"""The scheduler's tools for the orchestrator model: the same jobs the commands make."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from orchestrator.agent.send_file import send_file
from orchestrator.scheduler.replies import label, listing
from orchestrator.scheduler.requests import schedule_parts
from orchestrator.tools import ToolRegistry, ToolResult

if TYPE_CHECKING:
    from orchestrator.context import Context
    from orchestrator.scheduler.service import Scheduler

OFF = "error: scheduling is not running in this Fetch"


def _scheduler(ctx: Context) -> Scheduler | None:
    scheduler = ctx.services.scheduler
    return scheduler if scheduler is not None and scheduler.running else None


def register_tools(registry: ToolRegistry) -> None:
    @registry.tool(
        "schedule",
        # Every tool's words go out with every request: kept short (the 8 KB first turn).
        "Schedule a reminder (sent to the owner) or a prompt (run later in a fresh "
        "conversation: make it self-contained). Owner's timezone.",
        {
            "text": {"type": "string"},
            "when": {
                "type": "string",
                "description": "'in 20m', 'tomorrow 9:00', 'every weekday at 9', "
                "or cron '0 9 * * 1-5'",
            },
            "kind": {"type": "string", "enum": ["reminder", "prompt"]},
            "missed": {
                "type": "string",
                "enum": ["run_once", "skip"],  # if Fetch was off then; default run_once
            },
        },
        ["text", "when", "kind"],
    )
    async def schedule(ctx: Context, args: dict[str, Any]) -> ToolResult:
        scheduler = _scheduler(ctx)
        if scheduler is None:
            return ToolResult(OFF)
        kind, missed = args["kind"], args.get("missed", "run_once")
        if kind not in ("reminder", "prompt") or missed not in ("run_once", "skip"):
            return ToolResult("error: kind is reminder|prompt, missed is run_once|skip")
        return ToolResult(
            await schedule_parts(
                scheduler,
                kind,
                args["text"],
                args["when"],
                ctx.session.key,
                missed,
                creator=ctx.creator,
            )
        )

    @registry.tool(
        "schedule_list",
        "List scheduled jobs with ids.",
        {},
        [],
        kind="read",
    )
    async def schedule_list(ctx: Context, args: dict[str, Any]) -> ToolResult:
        scheduler = _scheduler(ctx)
        if scheduler is None:
            return ToolResult(OFF)
        jobs = await scheduler.jobs.listing(None, ("active", "paused", "failed"))
        return ToolResult(listing(jobs, scheduler.clock.now()))

    @registry.tool(
        "schedule_cancel",
        "Cancel a scheduled job by id.",
        {"id": {"type": "integer"}},  # "#3" is accepted too (see below)
        ["id"],
    )
    async def schedule_cancel(ctx: Context, args: dict[str, Any]) -> ToolResult:
        scheduler = _scheduler(ctx)
        if scheduler is None:
            return ToolResult(OFF)
        try:
            job_id = int(str(args["id"]).lstrip("#"))
        except ValueError:
            return ToolResult("error: id must be a job number")
        job = await scheduler.owned(job_id, None)
        if job is None:
            return ToolResult(f"error: no job #{job_id}; call schedule_list")
        await scheduler.cancel(job)
        return ToolResult(f"cancelled {label(job)}")

    # One tool for words and files (the request's bytes are counted: tests/agent/
    # test_wire_bytes.py): ``file`` sends a repo file with ``text`` as its caption.
    @registry.tool(
        "send_message",
        "Message the owner now (also from a job); file: a repo path too.",
        {"text": {"type": "string"}, "file": {"type": "string"}, "repo": {"type": "string"}},
        ["text"],
    )
    async def send_message(ctx: Context, args: dict[str, Any]) -> ToolResult:
        text = args["text"].strip()
        if args.get("file"):
            return await send_file(ctx, args, text)
        if not text:
            return ToolResult("error: the message is empty")
        await ctx.reply(text)  # a job's session is routed to the owner's chat
        return ToolResult("sent")
