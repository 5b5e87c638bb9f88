"""/remind, /schedule, /cron: reminders and recurring jobs, answered without a model."""

from __future__ import annotations

from core.events import SessionKey
from instincts.contract import InstinctContext
from instincts.router import InstinctRouter

router = InstinctRouter("schedule")
OFF = "Scheduling is turned off in the settings (scheduler.enabled: false)."
NATURAL = ("every", "daily", "hourly", "in", "at", "tomorrow", "today", "tonight", "on", "next")
CRON_HELP = (
    "🔁 /cron <5 fields or @daily> <what to do>, e.g. {example}\n"
    "/cron list · /cron cancel <id> · /cron pause <id> · /cron resume <id> · "
    "/cron missed <id> skip|run (what to do with runs missed while I was off)"
)


def _viewer(ctx: InstinctContext) -> SessionKey | None:
    """Whose jobs: the owner sees and may change all of them; an allowlisted sender only
    the jobs of their own chat."""
    return None if ctx.inbound.from_owner else ctx.session.key


async def _create(ctx: InstinctContext, args: str, kind: str, usage: str) -> None:
    """/remind and /schedule: usage, then list/cancel..., then a new job of ``kind``."""
    if not ctx.scheduling.enabled:
        await ctx.reply(OFF)
        return
    if not args:
        await ctx.reply(usage)
        return
    verb, _, rest = args.partition(" ")
    managed = await ctx.scheduling.manage(verb.lower(), rest, _viewer(ctx))
    await ctx.reply(
        managed if managed is not None else await ctx.scheduling.create(kind, args, ctx.session.key)
    )


@router.command(
    "remind",
    aliases=("reminder", "reminders"),
    help="remind me: /remind call mom in 20m · at 9am · tomorrow 9:00",
)
async def remind(ctx: InstinctContext, args: str) -> None:
    await _create(
        ctx,
        args,
        "reminder",
        f"⏰ /remind <what> in|at <when>, e.g. {ctx.scheduling.usage('reminder')}\n"
        "/remind list · /remind cancel <id>",
    )


@router.command(
    "schedule",
    aliases=("later",),
    help="run a prompt later: /schedule check the build of myapp at 9am",
)
async def schedule(ctx: InstinctContext, args: str) -> None:
    await _create(
        ctx,
        args,
        "prompt",
        f"🔁 /schedule <prompt> at|in|every <when>, e.g. "
        f"{ctx.scheduling.usage('prompt')}\n/schedule list · /cron cancel <id>",
    )


@router.command(
    "cron",
    aliases=("jobs",),
    help="recurring work: /cron 0 9 * * 1-5 <prompt> · list · cancel/pause <id>",
)
async def cron(ctx: InstinctContext, args: str) -> None:
    scheduling = ctx.scheduling
    if not scheduling.enabled:
        await ctx.reply(OFF)
        return
    if not args:
        args = "list" if ctx.inbound.command == "jobs" else ""
    if not args:
        await ctx.reply(CRON_HELP.format(example=scheduling.usage("cron")))
        return
    verb, _, rest = args.partition(" ")
    managed = await scheduling.manage(verb.lower(), rest, _viewer(ctx))
    if managed is not None:
        await ctx.reply(managed)
    elif verb.lower() in NATURAL:  # "/cron every weekday at 9 check ..." reads fine too
        await ctx.reply(await scheduling.create("prompt", args, ctx.session.key))
    else:
        await ctx.reply(await scheduling.create_cron(args, ctx.session.key))
