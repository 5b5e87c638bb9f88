"""/skills: the skills this chat can use (name, description, where each comes from and
whether it is active here), and /skills <name>: one skill's instructions."""

from __future__ import annotations

from instincts.contract import InstinctContext
from instincts.router import InstinctRouter

router = InstinctRouter("skills")


@router.command(
    "skills",
    aliases=("skill",),
    help="the skills I know; /skills <name> shows one",
    reads_only=True,
)
async def skills(ctx: InstinctContext, args: str) -> None:
    name = args.strip()
    if name:
        await ctx.reply(await ctx.skills.show(ctx.session, name))
    else:
        await ctx.reply(await ctx.skills.listing(ctx.session))
