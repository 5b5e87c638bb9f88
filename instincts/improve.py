"""/improve <what>: Fetch proposes a change to its own code as a pull request (it never
merges it); /prs: its pull requests and what became of them."""

from __future__ import annotations

from instincts.contract import InstinctContext
from instincts.router import InstinctRouter

router = InstinctRouter("improve")

USAGE = (
    "Usage: /improve <what to change in Fetch itself>\n"
    "e.g. /improve make /status show the kennel's uptime\n"
    "I work on a copy, run my tests in the kennel and open a pull request. I never merge it."
)


@router.command("improve", help="propose a change to Fetch itself as a pull request")
async def improve(ctx: InstinctContext, args: str) -> None:
    request = " ".join(args.split())
    if not request:
        await ctx.reply(USAGE)
        return
    refused = await ctx.improve.improve(ctx.session, request)
    if refused is not None:
        await ctx.reply(refused)


@router.command(
    "prs", aliases=("pulls",), help="Fetch's own pull requests and their state", reads_only=True
)
async def prs(ctx: InstinctContext, args: str) -> None:
    await ctx.reply(await ctx.improve.pull_requests())
