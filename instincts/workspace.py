"""/workspace: list the repos, or pick the active one."""

from __future__ import annotations

from instincts.contract import InstinctContext
from instincts.router import InstinctRouter

router = InstinctRouter("workspace")


@router.command(
    "workspace",
    aliases=("repos",),
    help="list repos; /workspace <name> picks one",
    while_working=False,
)
async def workspace(ctx: InstinctContext, args: str) -> None:
    if args:
        await ctx.reply(await ctx.workspace.use(ctx.session, args.split()[0]))
    else:
        await ctx.reply(ctx.workspace.listing(ctx.session.data.repo))


@router.command(
    "send",
    help="/send <path>: a file of the active repo to this chat (an image as an image)",
    reads_only=True,  # it changes no state: a replay after a crash sends it again
)
async def send(ctx: InstinctContext, args: str) -> None:
    await ctx.reply(await ctx.files.send(args))
