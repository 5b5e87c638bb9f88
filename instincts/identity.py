"""/identity /whoami /tools: who Fetch is and its pack, who the sender is and what they
may do, and the model tools they may use. Rendered by the application (the facade knows
the permission model and the tool registry); the answers are phone-sized."""

from __future__ import annotations

from instincts.contract import InstinctContext
from instincts.router import InstinctRouter

router = InstinctRouter("identity")


@router.command(
    "identity", aliases=("pack",), help="who Fetch is, its owner and its pack", reads_only=True
)
async def identity(ctx: InstinctContext, args: str) -> None:
    await ctx.reply(ctx.identity.identity())


@router.command("whoami", help="who you are to Fetch and what you may do", reads_only=True)
async def whoami(ctx: InstinctContext, args: str) -> None:
    await ctx.reply(ctx.identity.whoami())


@router.command("tools", help="the model's tools you may use", reads_only=True)
async def tools(ctx: InstinctContext, args: str) -> None:
    await ctx.reply(ctx.identity.tools())
