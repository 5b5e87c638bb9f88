"""/stop, /pause, /resume: control that must work at any moment; /autonomy and /project:
how this chat's diffs are committed, and the project it works in."""

from __future__ import annotations

from core.state import State
from instincts.contract import InstinctContext
from instincts.router import InstinctRouter

router = InstinctRouter("control")


def _not_theirs(ctx: InstinctContext) -> str | None:
    """A running task in a shared chat is stopped, paused or resumed only by whom it is
    for, or by the owner: a member's /stop does not end the owner's work."""
    whose = ctx.tasks.requester(ctx.session.key)
    if whose is None or ctx.grants.for_owner or whose == ctx.grants.subject_id:
        return None
    return f"🔒 The running task is {whose}'s: only they or the owner can stop or pause it."


@router.command(
    "stop", aliases=("cancel", "abort"), help="stop the running task now", bypass_queue=True
)
async def stop(ctx: InstinctContext, args: str) -> None:
    session = ctx.session
    refused = _not_theirs(ctx)
    if refused is not None:
        await ctx.reply(refused)
        return
    result = await ctx.tasks.stop(session.key)
    if result is not None and result.finished:
        await ctx.reply(
            f"Task #{result.task_id} had already finished; what it did is on its way. "
            "Answer no to a diff to drop it."
        )
        return
    if result is not None:
        leftover = (
            f"\n⚠️ {result.leftover_processes} process(es) still alive"
            if result.leftover_processes
            else ""
        )
        await ctx.reply(
            f"⏹ Stopped task #{result.task_id}: {result.harness} ended in "
            f"{result.kill_seconds:.2f} s. No changes were kept.{leftover}"
        )
        return
    if session.state is State.WAITING:
        async with session.lock:
            dropped = await ctx.tasks.drop_question(session)
            session.data.question = None
            session.data.question_context = {}
            await session.answered()
        if dropped is not None:
            await ctx.reply(
                f"⏹ Stopped task #{dropped} while it waited for your answer. No changes were kept."
            )
            return
        await ctx.reply("⏹ OK, forget that question.")
        return
    if session.state is State.GUARDING:
        await ctx.reply("Nothing is running. A diff waits for your yes or no.")
        return
    # A message of the chat being worked out (the model thinking, a task being set up)
    # starts no task now. Only its sender's or the owner's /stop counts.
    if session.stop_turn(None if ctx.grants.for_owner else ctx.grants.subject_id):
        await ctx.reply("⏹ Stopped: what you asked just before will not start a task.")
        return
    await ctx.reply("Nothing is running.")


@router.command("pause", help="hold the running task (or stop taking tasks) until /resume")
async def pause(ctx: InstinctContext, args: str) -> None:
    refused = _not_theirs(ctx)
    if refused is not None:
        await ctx.reply(refused)
        return
    held = await ctx.tasks.pause(ctx.session.key)
    if held is not None:
        await ctx.reply(
            f"⏸ Paused task #{held.task_id}: {held.harness} is stopped "
            f"({held.processes} process(es)) and its time limit waits.\n"
            "/resume to continue, /stop to end it."
        )
        return
    if ctx.session.state is State.WORKING:
        await ctx.reply("The task is finishing; nothing to pause.")
        return
    if ctx.session.state is State.GUARDING:
        await ctx.reply("Answer the waiting diff (yes/no) first.")
        return
    if ctx.session.state is State.RESTING:
        await ctx.reply("Already paused. /resume to continue.")
        return
    await ctx.session.pause()
    await ctx.reply("😴 Paused. /resume when you want me back.")


@router.command("resume", help="continue the paused task, or take tasks again")
async def resume(ctx: InstinctContext, args: str) -> None:
    refused = _not_theirs(ctx)
    if refused is not None:
        await ctx.reply(refused)
        return
    going = await ctx.tasks.resume(ctx.session.key)
    if going is not None:
        await ctx.reply(f"▶️ Resumed task #{going.task_id}: {going.harness} is running again.")
        return
    if ctx.session.state is not State.RESTING:
        await ctx.reply("I'm not paused.")
        return
    await ctx.session.resume()
    await ctx.reply("🐕 Back. What's next?")


@router.command("autonomy", help="how diffs land: supervised, semi or autonomous")
async def autonomy(ctx: InstinctContext, args: str) -> None:
    await ctx.reply(await ctx.tasks.autonomy(ctx.session, args))


@router.command(
    "project", aliases=("proj",), help="the repo: type, branch, status, task", reads_only=True
)
async def project(ctx: InstinctContext, args: str) -> None:
    await ctx.reply(await ctx.tasks.project(ctx.session))
