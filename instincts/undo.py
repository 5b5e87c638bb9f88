"""/undo: revert the last commit Fetch made in this conversation."""

from __future__ import annotations

from core.state import State
from instincts.contract import InstinctContext
from instincts.router import InstinctRouter

router = InstinctRouter("undo")


@router.command(
    "undo", aliases=("revert",), help="revert the last commit I made", while_working=False
)
async def undo(ctx: InstinctContext, args: str) -> None:
    if ctx.session.state is State.GUARDING:
        await ctx.reply("A diff waits for you: answer yes or no first.")
        return
    await ctx.reply(await ctx.commits.undo_last(ctx.session.key))
