"""/status: where things stand, answered at once, even mid-task."""

from __future__ import annotations

from instincts.contract import InstinctContext
from instincts.router import InstinctRouter

router = InstinctRouter("status")


@router.command(
    "status",
    aliases=("st",),
    help="state, repo, running task, sandbox",
    bypass_queue=True,
    reads_only=True,
)
async def status(ctx: InstinctContext, args: str) -> None:
    await ctx.reply(await ctx.status.report(ctx.session))
