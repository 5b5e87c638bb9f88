"""/remind, /schedule, /cron: reminders and recurring jobs, answered without a model."""

from __future__ import annotations

from core.events import SessionKey
from instincts.router import InstinctRouter
from orchestrator.context import Context
from orchestrator.scheduler.cron import EXAMPLE, CronError, parse_cron
from orchestrator.scheduler.jobs import Job
from orchestrator.scheduler.phrases import When
from orchestrator.scheduler.replies import confirmation, label, listing
from orchestrator.scheduler.requests import USAGE, schedule_line
from orchestrator.scheduler.service import Scheduler, SchedulingOff

router = InstinctRouter("schedule")
OFF = "Scheduling is turned off in the settings (scheduler.enabled: false)."
NATURAL = ("every", "daily", "hourly", "in", "at", "tomorrow", "today", "tonight", "on",
           "next")
CRON_HELP = (f"🔁 /cron <5 fields or @daily> <what to do>, e.g. {EXAMPLE}\n"
             "/cron list · /cron cancel <id> · /cron pause <id> · /cron resume <id> · "
             "/cron missed <id> skip|run (what to do with runs missed while I was off)")


def _viewer(ctx: Context) -> SessionKey | None:
    """Whose jobs: the owner sees and may change all of them; an allowlisted sender only
    the jobs of their own chat."""
    return None if ctx.inbound.from_owner else ctx.session.key


async def _scheduler(ctx: Context) -> Scheduler | None:
    if ctx.services.scheduler is None:
        await ctx.reply(OFF)
    return ctx.services.scheduler


async def _jobs(ctx: Context, scheduler: Scheduler) -> list[Job]:
    viewer = _viewer(ctx)
    key = None if viewer is None else scheduler.home_of(viewer)
    return await scheduler.jobs.listing(key, ("active", "paused", "failed"))


async def _manage(ctx: Context, scheduler: Scheduler, verb: str, rest: str) -> bool:
    """list / cancel / pause / resume / missed, shared by the three commands."""
    words = rest.split()
    now = scheduler.clock.now()
    if verb in ("list", "ls"):
        await ctx.reply(listing(await _jobs(ctx, scheduler), now))
        return True
    if verb not in ("cancel", "delete", "rm", "stop", "pause", "resume", "missed"):
        return False
    if not words or not words[0].lstrip("#").isdigit():
        await ctx.reply(f"Which job? /{verb} needs its number, e.g. /cron {verb} 3 "
                        "(/cron list shows them).")
        return True
    job = await scheduler.owned(int(words[0].lstrip("#")), _viewer(ctx))
    if job is None:
        await ctx.reply(f"I have no job #{words[0].lstrip('#')}. /cron list shows yours.")
        return True
    if verb in ("cancel", "delete", "rm", "stop"):
        ok = await scheduler.cancel(job)
        await ctx.reply(f"🗑 Cancelled {label(job)}." if ok else
                        f"{label(job)} is already {job.status}.")
    elif verb == "pause":
        ok = await scheduler.pause(job)
        await ctx.reply(f"⏸ Paused {label(job)}. /cron resume {job.id} to start it again."
                        if ok else f"{label(job)} is {job.status}, not active.")
    elif verb == "resume":
        resumed = await scheduler.resume(job)
        await ctx.reply(confirmation(resumed, now) if resumed is not None else
                        f"{label(job)} is {job.status}; only paused or failed jobs resume.")
    else:
        policy = {"skip": "skip", "run": "run_once", "once": "run_once"}.get(
            words[1].lower() if len(words) > 1 else "")
        if policy is None:
            await ctx.reply(f"/cron missed {job.id} skip — runs missed while I was off are "
                            f"only reported\n/cron missed {job.id} run — the latest missed "
                            "run happens once, late")
            return True
        await scheduler.jobs.set_missed_policy(job.id, policy)
        await ctx.reply(f"OK: missed runs of {label(job)} will be "
                        f"{'skipped (and reported)' if policy == 'skip' else 'run once, late'}.")
    return True


async def _guarded(ctx: Context, scheduler: Scheduler, kind: str, args: str) -> None:
    try:
        await ctx.reply(await schedule_line(scheduler, kind, args, ctx.session.key))
    except SchedulingOff as err:
        await ctx.reply(f"⚠️ {err}")


async def _create(ctx: Context, args: str, kind: str, usage: str) -> None:
    """/remind and /schedule: usage, then list/cancel..., then a new job of ``kind``."""
    scheduler = await _scheduler(ctx)
    if scheduler is None:
        return
    if not args:
        await ctx.reply(usage)
        return
    verb, _, rest = args.partition(" ")
    if await _manage(ctx, scheduler, verb.lower(), rest):
        return
    await _guarded(ctx, scheduler, kind, args)


@router.command("remind", aliases=("reminder", "reminders"),
                help="remind me: /remind call mom in 20m · at 9am · tomorrow 9:00")
async def remind(ctx: Context, args: str) -> None:
    await _create(ctx, args, "reminder",
                  f"⏰ /remind <what> in|at <when>, e.g. {USAGE['reminder']}\n"
                  "/remind list · /remind cancel <id>")


@router.command("schedule", aliases=("later",),
                help="run a prompt later: /schedule check the build of myapp at 9am")
async def schedule(ctx: Context, args: str) -> None:
    await _create(ctx, args, "prompt",
                  f"🔁 /schedule <prompt> at|in|every <when>, e.g. {USAGE['prompt']}\n"
                  "/schedule list · /cron cancel <id>")


@router.command("cron", aliases=("jobs",),
                help="recurring work: /cron 0 9 * * 1-5 <prompt> · list · cancel/pause <id>")
async def cron(ctx: Context, args: str) -> None:
    scheduler = await _scheduler(ctx)
    if scheduler is None:
        return
    if not args:
        args = "list" if ctx.inbound.text.lstrip("/").lower().startswith("jobs") else ""
    if not args:
        await ctx.reply(CRON_HELP)
        return
    verb, _, rest = args.partition(" ")
    if await _manage(ctx, scheduler, verb.lower(), rest):
        return
    if verb.lower() in NATURAL:  # "/cron every weekday at 9 check ..." reads fine too
        await _guarded(ctx, scheduler, "prompt", args)
        return
    words = args.split()
    size = 1 if words[0].startswith("@") else 5
    expr, prompt = " ".join(words[:size]), " ".join(words[size:]).strip()
    try:
        parsed = parse_cron(expr)
    except CronError as err:
        await ctx.reply(f"❌ {err}")
        return
    if not prompt:
        await ctx.reply(f"❓ What should I do {expr}? Like: {EXAMPLE}")
        return
    try:
        job = await scheduler.create(kind="prompt", text=prompt,
                                     when=When(None, parsed, expr), home=ctx.session.key)
    except SchedulingOff as err:
        await ctx.reply(f"⚠️ {err}")
        return
    await ctx.reply(confirmation(job, scheduler.clock.now()))
