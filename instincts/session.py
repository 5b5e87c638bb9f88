"""/clear: start the conversation afresh (never while work or a diff is pending)."""

from __future__ import annotations

from core.state import State
from instincts.contract import InstinctContext
from instincts.router import InstinctRouter

router = InstinctRouter("session")


@router.command(
    "clear",
    aliases=("reset", "new"),
    help="forget this conversation's context",
    while_working=False,
)
async def clear(ctx: InstinctContext, args: str) -> None:
    session = ctx.session
    if session.state is State.GUARDING:
        await ctx.reply("A diff waits for you: answer yes or no first.")
        return
    data = session.data
    data.repo = data.question = data.task_prompt = None
    data.question_context = {}
    data.frozen_prompt = {}  # a fresh conversation gets a fresh system prompt
    data.active_skills = []  # and no skill activated in the old one
    data.harness = None
    await session.reset()
    await ctx.reply("🧹 Cleared. Fresh start: no repo chosen, nothing pending.")
